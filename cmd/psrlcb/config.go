package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

// configurable makes every flag of a command settable two more ways, for
// scheduled jobs: an environment variable PSRLCB_<FLAG> (upper case, '-'
// as '_') and a YAML or TOML file named by --config (keys are the flag
// names; values in their natural types: `rank: 2`, `alpha: 0.1`,
// `force: true`, or quoted strings). A key that is no flag is refused,
// naming the nearest flag. Precedence: flag, environment, config file,
// default.
func configurable(flags []cli.Flag) ([]cli.Flag, cli.BeforeFunc) {
	out := make([]cli.Flag, 0, len(flags)+1)
	for _, f := range flags {
		out = append(out, withEnv(f))
	}
	out = append(out, &cli.PathFlag{
		Name:    "config",
		Usage:   "YAML (.yaml/.yml) or TOML (.toml) file of flag values, keys named as the flags",
		EnvVars: []string{"PSRLCB_CONFIG"},
	})
	before := func(c *cli.Context) error {
		path := c.Path("config")
		if path == "" {
			return nil
		}
		return applyConfig(c, path, out)
	}
	return out, before
}

// readConfig reads a YAML or TOML file of flag values into a map.
func readConfig(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	return decodeConfig(path, b)
}

// decodeConfig decodes the contents b of the config file path, as TOML
// or YAML by its extension.
func decodeConfig(path string, b []byte) (map[string]any, error) {
	vals := map[string]any{}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".toml":
		if _, err := toml.Decode(string(b), &vals); err != nil {
			return nil, usagef("--config %s: %v", path, err)
		}
	case ".yaml", ".yml":
		if err := yaml.Unmarshal(b, &vals); err != nil {
			return nil, usagef("--config %s: %v", path, err)
		}
	default:
		return nil, usagef("--config %s: use a .yaml, .yml or .toml file", path)
	}
	return vals, nil
}

// applyConfig sets every flag named in the file that neither the command
// line nor the environment set.
func applyConfig(c *cli.Context, path string, flags []cli.Flag) error {
	vals, err := readConfig(path)
	if err != nil {
		return err
	}
	cf := newConfigFile(c, path, flags)
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := cf.set(k, vals[k]); err != nil {
			return err
		}
	}
	return nil
}

// configFile applies the config file path to the command of c: its flags
// by every name, and their first names for suggestions.
type configFile struct {
	c      *cli.Context
	path   string
	byName map[string]cli.Flag
	names  []string
}

// newConfigFile indexes flags by their names.
func newConfigFile(c *cli.Context, path string, flags []cli.Flag) *configFile {
	cf := &configFile{c: c, path: path, byName: map[string]cli.Flag{}}
	for _, f := range flags {
		for _, n := range f.Names() {
			cf.byName[n] = f
		}
		cf.names = append(cf.names, f.Names()[0])
	}
	return cf
}

// set sets the flag of key k to the file's value v unless the command line
// or the environment set it; a key that is no flag is refused, naming the
// nearest flag.
func (cf *configFile) set(k string, v any) error {
	f, ok := cf.byName[k]
	if !ok || k == "config" {
		return cf.unknownKey(k)
	}
	name := f.Names()[0]
	if cf.c.IsSet(name) {
		return nil // the command line or the environment wins
	}
	strs, err := cf.flagValues(f, k, v)
	if err != nil {
		return err
	}
	return cf.setValues(name, k, strs)
}

// setValues sets flag name to each of strs, the values of key k, in
// order.
func (cf *configFile) setValues(name, k string, strs []string) error {
	for _, s := range strs {
		if err := cf.c.Set(name, s); err != nil {
			return usagef("--config %s: key %q: %q is not a valid value of --%s: %v", cf.path, k, s, name, err)
		}
	}
	return nil
}

// unknownKey is the error of a key k that is no flag of the command,
// naming the nearest flag when one is close.
func (cf *configFile) unknownKey(k string) error {
	msg := fmt.Sprintf("--config %s: unknown key %q: %s has no flag --%s", cf.path, k, cf.c.Command.Name, k)
	if near := nearest(k, cf.names); near != "" {
		msg += fmt.Sprintf("; did you mean %q (--%s)?", near, near)
	}
	return usagef("%s", msg)
}

// flagValues are the flag texts of key k's value v for the flag f: one,
// except for a string-slice flag.
func (cf *configFile) flagValues(f cli.Flag, k string, v any) ([]string, error) {
	strs, err := configStrings(v)
	if err != nil {
		return nil, usagef("--config %s: key %q: %v", cf.path, k, err)
	}
	if _, isList := v.([]any); isList {
		if _, isString := f.(*cli.StringFlag); isString {
			// A list for a string flag is its comma-separated form,
			// as in `alpha: [0, 0.3, 1]`.
			strs = []string{strings.Join(strs, ",")}
		}
	}
	if _, isSlice := f.(*cli.StringSliceFlag); !isSlice && len(strs) != 1 {
		return nil, usagef("--config %s: key %q takes one value, not a list", cf.path, k)
	}
	return strs, nil
}

// configStrings renders a YAML/TOML value as the flag text(s) it stands
// for: numbers and booleans in their usual form, a list as its items.
func configStrings(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case bool:
		return []string{strconv.FormatBool(x)}, nil
	case int:
		return []string{strconv.Itoa(x)}, nil
	case int64:
		return []string{strconv.FormatInt(x, 10)}, nil
	case uint64:
		return []string{strconv.FormatUint(x, 10)}, nil
	case float64:
		return []string{strconv.FormatFloat(x, 'g', -1, 64)}, nil
	case []any:
		return configList(x)
	case nil:
		return nil, fmt.Errorf("no value")
	}
	return nil, fmt.Errorf("a %T is not a flag value (use a number, a boolean, a string or a list)", v)
}

// configList renders the items of a YAML/TOML list, none of them a list.
func configList(x []any) ([]string, error) {
	var out []string
	for _, e := range x {
		s, err := configStrings(e)
		if err != nil {
			return nil, err
		}
		if len(s) != 1 {
			return nil, fmt.Errorf("nested lists are not flag values")
		}
		out = append(out, s[0])
	}
	return out, nil
}

// nearest is the name closest to k in edit distance, if close enough to
// be a likely misspelling.
func nearest(k string, names []string) string {
	best, bestD := "", len(k)/2+2
	for _, n := range names {
		if d := editDistance(k, n); d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func envName(flag string) string {
	return "PSRLCB_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// withEnv adds the flag's PSRLCB_<FLAG> variable.
func withEnv(f cli.Flag) cli.Flag {
	switch fl := f.(type) {
	case *cli.StringFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.PathFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.IntFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.Int64Flag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.Uint64Flag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.Float64Flag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.BoolFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.StringSliceFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	case *cli.DurationFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
	default:
		panic(fmt.Sprintf("configurable: flag type %T not handled", f))
	}
	return f
}
