package main

import (
	"flag"
	"strings"
)

// interspersed moves the flags that follow the log files in front of them,
// so that `psrlcb-beam fit logs.parquet --runner prism --out run` parses
// as psrlcb fit does (Go's flag package stops at the first positional
// argument). A flag of fs that is not boolean takes the next argument as
// its value; "--" ends the flags. psrlcb hands its command line over
// unchanged, flags anywhere.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
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
		if takesValue(fs, name) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	if len(pos) == 0 {
		return flags
	}
	return append(append(flags, "--"), pos...)
}

// takesValue says whether the flag name of fs takes a value: every flag
// but the boolean ones (an unknown flag takes none; parsing reports it).
func takesValue(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}
