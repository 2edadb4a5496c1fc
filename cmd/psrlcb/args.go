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
	cmd, ci := commandArg(app, args)
	if cmd == nil {
		return args
	}
	flags, pos := splitFlags(args[ci+1:], valueFlags(cmd))
	out := append([]string{}, args[:ci+1]...)
	out = append(out, flags...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

// commandArg finds the command named by the first argument after the
// program name that is not a global flag, and its index; nil, −1 when that
// argument names no command.
func commandArg(app *cli.App, args []string) (*cli.Command, int) {
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
	return cmd, ci
}

// valueFlags says, for every name of cmd's flags, whether the flag takes
// a value.
func valueFlags(cmd *cli.Command) map[string]bool {
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
	return takesValue
}

// splitFlags separates the command's arguments rest into its flags (with
// their values) and its positional arguments, all of them after "--".
func splitFlags(rest []string, takesValue map[string]bool) (flags, pos []string) {
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
	return flags, pos
}

// noArgs refuses positional arguments to the command name.
func noArgs(c *cli.Context, name string) error {
	if c.NArg() > 0 {
		return usagef("%s takes no arguments (got %q)", name, c.Args().Slice())
	}
	return nil
}
