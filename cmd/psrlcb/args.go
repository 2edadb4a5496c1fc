package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed lets flags follow the positional arguments, as in
// `psrlcb fit logs/*.parquet --out DIR`: the command-line parser stops at
// the first positional argument, so the flags after it are moved in front
// of the positionals. "--" ends flag parsing as usual.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var cmd *cli.Command
	ci := -1
	for i := 1; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			continue // a global flag such as --help
		}
		for _, c := range app.Commands {
			if c.HasName(args[i]) {
				cmd, ci = c, i
			}
		}
		break
	}
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		// Every flag type of the parser, and the config-file wrappers
		// around them, say whether they take a value; a flag that does
		// not (a bool) must not swallow the argument after it.
		tv := true
		if v, ok := f.(interface{ TakesValue() bool }); ok {
			tv = v.TakesValue()
		}
		for _, n := range f.Names() {
			takesValue[n] = tv
		}
	}
	var flags, pos []string
	rest := args[ci+1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue[name] && i+1 < len(rest) {
			flags = append(flags, rest[i+1])
			i++
		}
	}
	out := append([]string{}, args[:ci+1]...)
	out = append(out, flags...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}
