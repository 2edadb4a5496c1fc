// Package outdir stages a command's output directory beside its final
// place and moves it there only when the whole run succeeded, so that a
// failed, cancelled or killed run never leaves a partial result, and
// --force never deletes anything but an earlier output of the same
// command.
//
// The rules:
//
//   - An existing output directory is replaced only with Options.Force,
//     and only when it is recognisably an earlier output of the same
//     command: it holds Options.Marker and every entry matches one of
//     Options.Known. Anything else is refused with an error that names
//     what is in the way.
//   - The output may not be, contain or lie inside any of Options.Inputs
//     (after making paths absolute and resolving symbolic links), nor be
//     the current directory or one of its ancestors.
//   - Nothing is created at the output's place until Commit: missing
//     parent directories are made only then. The staging directory
//     .NAME.partial-pPID-RAND lives in the parent (or, while the parent does
//     not exist, in its nearest existing ancestor).
//   - Replacing is two renames: the old directory to .NAME.partial-…​.old,
//     the staged one to NAME. A process killed between them leaves both
//     under their hidden names; Recover (called by Create, and by
//     `psrlcb inspect DIR`) puts the old one back. Staging directories of
//     processes that no longer run are removed (also from the ancestor
//     that held them while the parent did not exist).
package outdir

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/psrlcb/psrlcb/errkind"
)

// ErrExists is returned when the output directory exists and the
// caller did not ask to replace it, or it is not an output that may be
// replaced.
var ErrExists = errkind.New(errkind.Options, "output directory exists")

// ErrOverlap is returned when the output is, contains or lies inside an
// input, or is the current directory.
var ErrOverlap = errkind.New(errkind.Options, "refused output directory")

// Options say what an output directory of the command looks like and what
// it must stay clear of.
type Options struct {
	// Force replaces an existing output of the same command.
	Force bool
	// Command names the command in messages ("psrlcb fit").
	Command string
	// Marker is a file every output of the command holds (manifest.json
	// for fit); a directory without it is never replaced.
	Marker string
	// Known are shell patterns (path.Match) of the names an output of the
	// command may hold; a directory holding any other name is never
	// replaced.
	Known []string
	// Inputs are the files and directories the run reads.
	Inputs []string
}

// Dir stages a run's outputs in a hidden temporary directory beside the
// final one and moves it into place only on Commit.
type Dir struct {
	Final string
	Tmp   string
	// Notes says what Create found and repaired beside Final (leftovers of
	// killed runs), one sentence each, for the user.
	Notes []string
	force bool
	opts  Options
}

const partialTag = ".partial-"

// Create checks final against the rules of the package and prepares the
// staging directory. It creates nothing but the hidden staging directory.
func Create(final string, o Options) (*Dir, error) {
	if err := checkTarget(final, o.Inputs); err != nil {
		return nil, err
	}
	final = filepath.Clean(final)
	notes, err := Recover(final)
	if err != nil {
		return nil, err
	}
	if err := checkExisting(final, o); err != nil {
		return nil, err
	}
	stageIn, more, err := stagingDir(final)
	if err != nil {
		return nil, err
	}
	notes = append(notes, more...)
	tmp := filepath.Join(stageIn, fmt.Sprintf(".%s%sp%d-%d", filepath.Base(final), partialTag, os.Getpid(), rand.Uint32()))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	return &Dir{Final: final, Tmp: tmp, Notes: notes, force: o.Force, opts: o}, nil
}

// checkTarget refuses an empty output directory name and a final that
// breaks the rules on its place (checkPlace).
func checkTarget(final string, inputs []string) error {
	if final == "" {
		return fmt.Errorf("%w: no output directory given", ErrOverlap)
	}
	abs, err := resolve(final)
	if err != nil {
		return err
	}
	return checkPlace(final, abs, inputs)
}

// checkExisting refuses an existing final unless o.Force is set and final
// is a directory that is an earlier output of the command.
func checkExisting(final string, o Options) error {
	fi, err := os.Lstat(final)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if !o.Force {
		return fmt.Errorf("%w: %s (use --force to replace an earlier output of %s)", ErrExists, final, cmdName(o))
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a symbolic link; --force replaces only a directory written by %s, so name the directory itself", ErrExists, final, cmdName(o))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is a file, not an earlier output of %s; --force replaces only those", ErrExists, final, cmdName(o))
	}
	return checkReplaceable(final, o)
}

// stagingDir is where final is staged: its parent or, while the parent
// does not exist, its nearest existing ancestor, where it also repairs
// what killed runs left; it returns the sentences of those repairs.
func stagingDir(final string) (string, []string, error) {
	parent := filepath.Dir(final)
	stageIn, err := nearestExisting(parent, final)
	if err != nil || stageIn == parent {
		return stageIn, nil, err
	}
	// Staging directories of killed runs into the same missing
	// parent lie here.
	notes, err := Recover(filepath.Join(stageIn, filepath.Base(final)))
	if err != nil {
		return "", nil, err
	}
	return stageIn, notes, nil
}

// nearestExisting is dir or its nearest existing ancestor (the root when
// none exists); it fails when that is a file, where the directory final
// cannot be made.
func nearestExisting(dir, final string) (string, error) {
	for {
		if fi, err := os.Stat(dir); err == nil {
			if !fi.IsDir() {
				return "", fmt.Errorf("%w: %s is a file, so %s cannot be a directory", ErrExists, dir, final)
			}
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return dir, nil
		}
		dir = up
	}
}

func cmdName(o Options) string {
	if o.Command == "" {
		return "this command"
	}
	return o.Command
}

// resolve makes path absolute and resolves symbolic links in its longest
// existing prefix.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	cur := abs
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = filepath.Join(r, rest[i])
			}
			return r, nil
		}
		up := filepath.Dir(cur)
		if up == cur {
			return abs, nil
		}
		rest = append(rest, filepath.Base(cur))
		cur = up
	}
}

// within reports whether path is dir or lies inside it (both absolute and
// clean).
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(path, dir)
}

func checkPlace(final, abs string, inputs []string) error {
	if filepath.Dir(abs) == abs {
		return fmt.Errorf("%w: --out %s is the root directory", ErrOverlap, final)
	}
	if err := checkWorkDir(final, abs); err != nil {
		return err
	}
	for _, in := range inputs {
		if err := checkInput(final, abs, in); err != nil {
			return err
		}
	}
	return nil
}

// checkWorkDir refuses an output directory abs (final as given) that is
// the current directory or one of its parents.
func checkWorkDir(final, abs string) error {
	if wd, err := os.Getwd(); err == nil {
		if rwd, err := resolve(wd); err == nil && within(rwd, abs) {
			return fmt.Errorf("%w: --out %s is the current directory or one of its parents; name a new directory", ErrOverlap, final)
		}
	}
	return nil
}

// checkInput refuses an output directory abs (final as given) that is the
// input in, contains it or lies inside it; an input that does not resolve
// is passed over.
func checkInput(final, abs, in string) error {
	rin, err := resolve(in)
	if err != nil {
		return nil
	}
	switch {
	case rin == abs:
		return fmt.Errorf("%w: --out %s is the input %s", ErrOverlap, final, in)
	case within(rin, abs):
		return fmt.Errorf("%w: --out %s contains the input %s", ErrOverlap, final, in)
	case within(abs, rin):
		return fmt.Errorf("%w: --out %s lies inside the input directory %s", ErrOverlap, final, in)
	}
	return nil
}

// checkReplaceable refuses a directory that is not an earlier output of
// the command.
func checkReplaceable(dir string, o Options) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	foreign, marker := scanEntries(entries, o)
	if !marker || o.Marker == "" {
		what := "it is empty"
		if len(entries) > 0 {
			what = "it holds " + list(names(entries))
		}
		return fmt.Errorf("%w: %s has no %s, so it is not an earlier output of %s (%s); --force replaces only those, so remove or rename it yourself",
			ErrExists, dir, o.Marker, cmdName(o), what)
	}
	if len(foreign) > 0 {
		return fmt.Errorf("%w: %s holds %s, which %s does not write; --force replaces only an unaltered earlier output, so move those away first",
			ErrExists, dir, list(foreign), cmdName(o))
	}
	return nil
}

// scanEntries lists the entries of a directory that the command does not
// write (not regular files, or matching none of o.Known) and reports
// whether o.Marker is among them as a regular file.
func scanEntries(entries []os.DirEntry, o Options) (foreign []string, marker bool) {
	for _, e := range entries {
		name := e.Name()
		if name == o.Marker && e.Type().IsRegular() {
			marker = true
		}
		if !e.Type().IsRegular() || !known(name, o.Known) {
			foreign = append(foreign, name)
		}
	}
	return foreign, marker
}

func known(name string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

func names(entries []os.DirEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name()
	}
	return out
}

func list(names []string) string {
	sort.Strings(names)
	const show = 5
	if len(names) > show {
		return strings.Join(names[:show], ", ") + fmt.Sprintf(" and %d more", len(names)-show)
	}
	return strings.Join(names, ", ")
}

// Path is where a file named name is staged.
func (o *Dir) Path(name string) string { return filepath.Join(o.Tmp, name) }

// Commit moves the staged directory into place, making the missing parent
// directories first. With Force an existing final directory is moved aside
// to Tmp+".old" and removed once the new one is in place.
func (o *Dir) Commit() error {
	if err := os.Chmod(o.Tmp, 0o755); err != nil {
		return err
	}
	parent := filepath.Dir(o.Final)
	if filepath.Dir(o.Tmp) != parent {
		return o.commitMakingParent(parent)
	}
	old, err := o.moveAside()
	if err != nil {
		return err
	}
	if err := os.Rename(o.Tmp, o.Final); err != nil {
		if old != "" {
			_ = os.Rename(old, o.Final)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// commitMakingParent commits a directory staged in an ancestor: it makes
// the parent now, then moves, removing the directories it made when the
// move fails.
func (o *Dir) commitMakingParent(parent string) error {
	made, err := mkdirAll(parent)
	if err != nil {
		return err
	}
	if err := os.Rename(o.Tmp, o.Final); err != nil {
		removeMade(made)
		return err
	}
	return nil
}

// moveAside moves an existing final directory to Tmp+".old" and returns
// that path ("" when there is no final directory), once it is checked to
// be replaceable.
func (o *Dir) moveAside() (old string, err error) {
	if _, err := os.Lstat(o.Final); err != nil {
		return "", nil
	}
	if !o.force {
		return "", fmt.Errorf("%w: %s appeared during the run", ErrExists, o.Final)
	}
	// Checked again: files may have been added during the run.
	if err := checkReplaceable(o.Final, o.opts); err != nil {
		return "", err
	}
	old = o.Tmp + ".old"
	if err := os.Rename(o.Final, old); err != nil {
		return "", err
	}
	return old, nil
}

// mkdirAll makes dir and its missing parents and returns the directories
// it made, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for cur := dir; ; {
		if _, err := os.Stat(cur); err == nil {
			break
		}
		missing = append(missing, cur)
		up := filepath.Dir(cur)
		if up == cur {
			break
		}
		cur = up
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !os.IsExist(err) {
			removeMade(made)
			return nil, err
		}
		made = append(made, missing[i])
	}
	return made, nil
}

// removeMade removes the directories mkdirAll made, innermost first.
func removeMade(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		_ = os.Remove(made[i])
	}
}

// Abort removes the staged directory; the final one is left as it was.
func (o *Dir) Abort() { _ = os.RemoveAll(o.Tmp) }

// Recover looks in final's parent for what killed runs into that parent
// left (for final and any other output name NAME there) and repairs it:
//
//   - .NAME.partial-X.old together with .NAME.partial-X and no NAME: a
//     --force replace was killed between its two renames. The old output
//     is put back at NAME and the unfinished new one removed (the run that
//     made it did not succeed).
//   - .NAME.partial-X.old alone, NAME present: the replace was killed
//     while removing the old output; the rest is removed.
//   - .NAME.partial-X alone: the staging directory of a killed run,
//     removed.
//
// Entries of a process that still runs are left alone. Recover returns one
// sentence per repair.
func Recover(final string) ([]string, error) {
	parent := filepath.Dir(filepath.Clean(final))
	entries, err := os.ReadDir(parent)
	if err != nil {
		if os.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil
		}
		return nil, err
	}
	byName := collectLeftovers(entries)
	var notes []string
	for _, name := range sortedKeysOf(byName) {
		if notes, err = byName[name].repair(parent, name, notes); err != nil {
			return notes, err
		}
	}
	return notes, nil
}

// leftovers are what killed runs left for one output name: staging
// directories (staged) and moved-aside earlier outputs (olds, .old).
type leftovers struct {
	staged map[string]bool
	olds   []string
}

// collectLeftovers groups by output name the staging directories among
// entries whose process no longer runs.
func collectLeftovers(entries []os.DirEntry) map[string]*leftovers {
	byName := map[string]*leftovers{}
	for _, e := range entries {
		name, ok := abandonedStage(e)
		if !ok {
			continue
		}
		l := byName[name]
		if l == nil {
			l = &leftovers{staged: map[string]bool{}}
			byName[name] = l
		}
		l.add(e.Name())
	}
	return byName
}

// abandonedStage returns the output name of entry e when it is a staging
// directory whose process no longer runs.
func abandonedStage(e os.DirEntry) (name string, ok bool) {
	if !e.IsDir() {
		return "", false
	}
	name, pid, ok := parseStage(e.Name())
	if !ok || alive(pid) {
		return "", false
	}
	return name, true
}

// add records the leftover directory n among the old outputs (a ".old"
// name) or the staged ones.
func (l *leftovers) add(n string) {
	if strings.HasSuffix(n, ".old") {
		l.olds = append(l.olds, n)
	} else {
		l.staged[n] = true
	}
}

// repair repairs the leftovers of output name in parent (see Recover),
// appending one sentence per repair to notes.
func (l *leftovers) repair(parent, name string, notes []string) ([]string, error) {
	target := filepath.Join(parent, name)
	for _, old := range l.olds {
		note, err := l.repairOld(parent, target, old)
		if err != nil {
			return notes, err
		}
		notes = append(notes, note)
	}
	for _, n := range sortedKeysOf(l.staged) {
		if err := os.RemoveAll(filepath.Join(parent, n)); err != nil {
			return notes, err
		}
		notes = append(notes, fmt.Sprintf("removed %s, the unfinished output of a killed run", filepath.Join(parent, n)))
	}
	return notes, nil
}

// repairOld puts the moved-aside output old back at target when its
// replace was killed between the two renames, leaves it alone (and its
// staging directory too) when target exists again, and otherwise removes
// it. It returns the sentence saying so.
func (l *leftovers) repairOld(parent, target, old string) (string, error) {
	oldPath := filepath.Join(parent, old)
	stage := strings.TrimSuffix(old, ".old")
	_, targetErr := os.Lstat(target)
	switch {
	case l.staged[stage] && os.IsNotExist(targetErr):
		if err := os.Rename(oldPath, target); err != nil {
			return "", fmt.Errorf("restoring %s from %s: %w", target, oldPath, err)
		}
		return fmt.Sprintf("restored %s from %s, left by a --force run killed while replacing it", target, old), nil
	case l.staged[stage]:
		delete(l.staged, stage)
		return fmt.Sprintf("left %s alone: a --force run was killed while replacing %s, and %s exists again; it holds the previous output", oldPath, target, target), nil
	default:
		if err := os.RemoveAll(oldPath); err != nil {
			return "", err
		}
		return fmt.Sprintf("removed %s, the replaced output a --force run was killed while deleting", oldPath), nil
	}
}

// parseStage splits a staging directory's name .NAME.partial-pPID-RAND
// (or the same with .old) into NAME and PID.
func parseStage(n string) (name string, pid int, ok bool) {
	if !strings.HasPrefix(n, ".") {
		return "", 0, false
	}
	i := strings.LastIndex(n, partialTag)
	if i <= 1 {
		return "", 0, false
	}
	pid, ok = stagePID(strings.TrimSuffix(n[i+len(partialTag):], ".old"))
	return n[1:i], pid, ok
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stagePID reads the process id from the tail "pPID-RAND" of a staging
// directory's name.
func stagePID(tail string) (int, bool) {
	if !strings.HasPrefix(tail, "p") {
		return 0, false
	}
	i := strings.IndexByte(tail, '-')
	if i < 0 {
		return 0, false
	}
	if _, err := strconv.ParseUint(tail[i+1:], 10, 32); err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(tail[1:i])
	return pid, err == nil && pid > 0
}

// alive reports whether process pid runs (this one included).
func alive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
