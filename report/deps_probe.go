package report

import (
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/urfave/cli/v2/altsrc"
	_ "golang.org/x/term"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg/vgsvg"
)
