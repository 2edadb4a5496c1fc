package report_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/report"
)

// chromiumPath finds a Chromium binary (the Debian package `chromium`,
// which .ci/run installs when missing).
func chromiumPath() string {
	if p := os.Getenv("PSRLCB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestReportInBrowser renders report.html of a fit of the example logs in
// headless Chromium, at 1400 and 800 CSS pixels wide, and fails on any
// console error or uncaught exception, on any request that leaves the page
// (the page must be self-contained) and on a page wider than the window.
// Screenshots go to the test's artifact directory (go test -artifacts
// keeps them under -outputdir).
//
// Console errors come from the DevTools protocol (chromedp) rather than
// from parsing `--enable-logging=stderr`: the protocol reports the page's
// own console calls, exceptions and failed loads as typed events with a
// level and a URL, while Chromium's stderr mixes them with the browser's
// own diagnostics (a headless run here logs a D-Bus ERROR line on a
// healthy page) in a format that changes between versions.
func TestReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs and starts a browser")
	}
	exe := chromiumPath()
	if exe == "" {
		t.Skip("Chromium not found: install the Debian package `chromium` (.ci/run does) or set PSRLCB_CHROMIUM to run the browser check of report.html")
	}
	dir := t.TempDir()
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	res, err := pipeline.Run(context.Background(), logs, pipeline.Options{
		Estimate: estimate.Options{MaxRank: 3, Restarts: 2, MaxIter: 60}, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteOutcome(dir, &res.Outcome); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, report.HTMLFile)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{`id="policy"`, `id="glossary"`, `id="fig-rank"`, `id="behaviour"`} {
		if !strings.Contains(string(html), id) {
			t.Errorf("report.html has no %s", id)
		}
	}
	if len(html) > 2<<20 {
		t.Errorf("report.html is %d bytes, over 2 MB", len(html))
	}

	// Chromium's helper processes may still write into its profile for a
	// moment after the browser is stopped, which makes t.TempDir's
	// cleanup fail the test ("directory not empty"): the profile is
	// removed here, retried for a few seconds, and a leftover is logged.
	profile, err := os.MkdirTemp("", "psrlcb-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for try := 0; ; try++ {
			if err := os.RemoveAll(profile); err == nil || try == 20 {
				if err != nil {
					t.Logf("chromium profile %s not removed: %v", profile, err)
				}
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		// Chromium once took longer than chromedp's default 20 s to
		// print its DevTools address in CI; the test's own 90 s bound
		// still holds.
		chromedp.WSURLReadTimeout(90*time.Second),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	var problems []string
	pageURL := (&url.URL{Scheme: "file", Path: page}).String()
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console error: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.LevelError {
				problems = append(problems, fmt.Sprintf("console %s error: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; u != pageURL && !strings.HasPrefix(u, "data:") {
				problems = append(problems, "request outside the page: "+u)
			}
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable(), network.Enable(), runtime.Enable()); err != nil {
		t.Fatal(err)
	}
	out := t.ArtifactDir()
	for _, width := range []int64{1400, 800} {
		var scrollW, innerW int64
		var shot []byte
		err := chromedp.Run(ctx,
			emulation.SetDeviceMetricsOverride(width, 900, 1, false),
			chromedp.Navigate(pageURL),
			chromedp.WaitReady("#glossary", chromedp.ByQuery),
			chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollW),
			chromedp.Evaluate(`window.innerWidth`, &innerW),
			chromedp.FullScreenshot(&shot, 100),
		)
		if err != nil {
			t.Fatal(err)
		}
		if scrollW > innerW {
			t.Errorf("at %d px the page is %d px wide, wider than the window (%d px)", width, scrollW, innerW)
		}
		name := filepath.Join(out, fmt.Sprintf("report-%d.png", width))
		if err := os.WriteFile(name, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", name)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
}
