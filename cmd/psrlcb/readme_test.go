package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readme is the project's README, from this package's directory.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeMainCommand runs the README's main command (its first sh
// block) on the shipped logs, into a temporary directory instead of
// out/tiger, and checks that the printed summary is the one the README
// shows under "What a run gives you": every line the README prints in
// full, and the first words of the verdict.
func TestReadmeMainCommand(t *testing.T) {
	text := readme(t)
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(text)
	if block == nil {
		t.Fatal("README has no sh block")
	}
	const prefix = "bash scripts/psrlcb "
	cmd := strings.TrimSpace(block[1])
	if !strings.HasPrefix(cmd, prefix) {
		t.Fatalf("README's main command %q does not start with %q", cmd, prefix)
	}
	args := strings.Fields(strings.TrimPrefix(cmd, prefix))
	out := filepath.Join(t.TempDir(), "tiger")
	for i, a := range args {
		switch {
		case a == "--out" && i+1 < len(args):
			args[i+1] = out
		case strings.HasSuffix(a, ".parquet"):
			args[i] = "../../" + a
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), newApp(), append([]string{"psrlcb"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("%s: exit %d\n%s", cmd, code, stderr.String())
	}
	shown := regexp.MustCompile("(?s)## What a run gives you\n\n```\n\\$ psrlcb (.*?)\n(.*?)```").FindStringSubmatch(text)
	if shown == nil {
		t.Fatal(`README has no "What a run gives you" example`)
	}
	if shown[1] != strings.Join(strings.Fields(strings.TrimPrefix(cmd, prefix)), " ") {
		t.Errorf("the example runs %q, the main command %q", shown[1], strings.TrimPrefix(cmd, prefix))
	}
	got := stdout.String()
	for _, line := range strings.Split(strings.TrimSpace(shown[2]), "\n") {
		switch {
		case strings.HasSuffix(line, "..."):
			line = strings.TrimSuffix(line, "...")
		case strings.HasPrefix(line, "wrote "):
			line = "wrote "
		}
		if !strings.Contains(got, line) {
			t.Errorf("README shows %q; the run printed:\n%s", line, got)
		}
	}
}

// TestReadmeFlagsExist: every --flag the README names is a flag of one of
// the commands (Beam's own flags excepted), so a renamed or removed flag
// cannot linger in the documentation.
func TestReadmeFlagsExist(t *testing.T) {
	known := map[string]bool{"endpoint": true} // Beam's, passed through to psrlcb-beam
	for _, c := range newCommands() {
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				known[n] = true
			}
		}
	}
	for _, m := range regexp.MustCompile(`--([a-z][a-z-]*)`).FindAllStringSubmatch(readme(t), -1) {
		if !known[m[1]] {
			t.Errorf("README names --%s, which no command has", m[1])
		}
	}
}

// TestReadmeCommandsExist: every command of the README's command table
// is a command of psrlcb.
func TestReadmeCommandsExist(t *testing.T) {
	app := newApp()
	for _, m := range regexp.MustCompile("(?m)^\\| `psrlcb ([a-z-]+)").FindAllStringSubmatch(readme(t), -1) {
		if app.Command(m[1]) == nil {
			t.Errorf("README's command table lists psrlcb %s, which does not exist", m[1])
		}
	}
}
