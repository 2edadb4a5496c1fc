package ope

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// ReadTarget reads an evaluated policy for the logs d: a psrlcb policy
// table (a run directory or its policy.arrow), else a stochastic policy
// table (Arrow, or Parquet by the extension .parquet; ReadTable).
func ReadTarget(path string, d *ingest.Dataset) (Target, error) {
	file, tree, err := targetKind(path)
	if err != nil {
		return nil, err
	}
	if tree {
		return readTreeTarget(file, d)
	}
	return ReadTable(file, d)
}

// readTreeTarget reads the psrlcb policy table file as a target for the
// logs d.
func readTreeTarget(file string, d *ingest.Dataset) (Target, error) {
	pol, _, err := policy.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return NewTreeTarget(pol, d)
}

// CheckTarget reads the policy at path as ReadTarget would, without logs
// to check its symbols against: a run checks what it will evaluate before
// any long work.
func CheckTarget(path string) error {
	file, tree, err := targetKind(path)
	if err != nil {
		return err
	}
	if tree {
		_, _, err = policy.ReadFile(file)
		return err
	}
	_, err = readTableRows(file)
	return err
}

// targetKind resolves a run directory to its policy.arrow and says
// whether the file is a psrlcb policy table (else a stochastic one).
func targetKind(path string) (file string, tree bool, err error) {
	if file, err = policyFile(path); err != nil {
		return "", false, err
	}
	if strings.EqualFold(filepath.Ext(file), ".parquet") {
		return file, false, nil
	}
	tree, err = isPolicyTree(file)
	if err != nil {
		return "", false, err
	}
	return file, tree, nil
}

// policyFile resolves a run directory to its policy.arrow; any other path
// is the file itself.
func policyFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		return filepath.Join(path, policy.FileName), nil
	}
	return path, nil
}

// isPolicyTree says whether the Arrow file is a psrlcb policy table: its
// metadata says so, or it has a node column.
func isPolicyTree(file string) (bool, error) {
	t, err := arrowio.ReadArrow(file)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrTarget, file, err)
	}
	return t.Meta["psrlcb.table"] == "policy" || column(t, "node") != nil, nil
}
