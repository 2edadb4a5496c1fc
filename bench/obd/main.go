// Command obd evaluates, with psrlcb evaluate --logs, the Bernoulli
// Thompson Sampling policy of the Open Bandit Dataset from the logs of its
// uniform-random policy, and compares with BTS's own logged click rate, as
// Open Bandit Pipeline's examples/obd does (docs/evaluation.md, "Public
// real logs").
//
// The dataset is not part of psrlcb: fetch the repository st-tech/zr-obp
// and point --obd at its obd directory, which holds
// {random,bts}/{men,women}/{men,women}.csv (10,000 impressions each).
// Each impression becomes an episode of one step: the observation is the
// position (the slot, 1–3: the logged propensity is the item's
// probability given the slot, so the slot is what the policy sees), the
// action the item, the reward the click, the propensity the logged
// propensity_score. BTS's action distribution does not depend on the
// user, only on the slot: it is estimated as the frequency of each item at
// each slot in the BTS logs and written as a stochastic policy table. The
// truth is BTS's mean click in its own logs (the on-policy estimate).
//
// Protocol of examples/obd: --runs bootstrap resamples of the random logs
// (seeds 1..runs, sampled with replacement to the same size), each
// evaluated with psrlcb evaluate --logs --json; the relative error
// |estimate − truth| / truth of each estimator, averaged over the runs.
// Run 0, the logs as they are, gives the intervals.
//
// Usage:
//
//	go run ./bench/obd --obd PATH/zr-obp/obd --psrlcb bin/psrlcb [--runs 30] [--work DIR]
package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/schemas"
)

type impression struct {
	item, position string
	click          float64
	propensity     float64
}

func main() {
	dir := flag.String("obd", "", "the obd directory of a checkout of st-tech/zr-obp")
	bin := flag.String("psrlcb", "bin/psrlcb", "the psrlcb binary")
	runs := flag.Int("runs", 30, "bootstrap resamples of the random logs")
	work := flag.String("work", "bench/out/obd", "directory for the Parquet logs, tables and JSON results")
	campaigns := flag.String("campaigns", "men,women", "comma-separated campaigns")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "obd: --obd is required (the obd directory of a checkout of st-tech/zr-obp)")
		os.Exit(2)
	}
	if err := os.MkdirAll(*work, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "obd:", err)
		os.Exit(1)
	}
	fmt.Println("| campaign | estimator | relative error, mean ± sd over runs | estimate on the logs as they are [95% interval] | holds the truth |")
	fmt.Println("|---|---|---|---|---|")
	for _, c := range strings.Split(*campaigns, ",") {
		if err := campaign(*dir, *bin, *work, c, *runs); err != nil {
			fmt.Fprintln(os.Stderr, "obd:", err)
			os.Exit(1)
		}
	}
}

func campaign(dir, bin, work, c string, runs int) error {
	random, err := readCSV(filepath.Join(dir, "random", c, c+".csv"))
	if err != nil {
		return err
	}
	bts, err := readCSV(filepath.Join(dir, "bts", c, c+".csv"))
	if err != nil {
		return err
	}
	// The truth: BTS's mean click in its own logs, with its standard error.
	truth, sq := 0.0, 0.0
	for _, r := range bts {
		truth += r.click
		sq += r.click * r.click
	}
	n := float64(len(bts))
	truth /= n
	se := math.Sqrt((sq/n - truth*truth) / n)
	table := filepath.Join(work, c+"-bts-policy.parquet")
	if err := writeTable(table, bts, random); err != nil {
		return err
	}
	type result struct{ value, lower, upper float64 }
	rel := map[string][]float64{}
	var asIs map[string]result
	var order []string
	for b := 0; b <= runs; b++ {
		logs := random
		if b > 0 {
			rng := rand.New(rand.NewPCG(uint64(b), 0x0bd))
			logs = make([]impression, len(random))
			for i := range logs {
				logs[i] = random[rng.IntN(len(random))]
			}
		}
		path := filepath.Join(work, fmt.Sprintf("%s-random-%d.parquet", c, b))
		if err := writeLogs(path, logs); err != nil {
			return err
		}
		out, err := exec.Command(bin, "evaluate", "--logs", path, "--policy", table, "--json", "--seed", strconv.Itoa(b+1)).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("%s run %d: %v: %s", c, b, err, ee.Stderr)
		} else if err != nil {
			return err
		}
		if err := os.WriteFile(strings.TrimSuffix(path, ".parquet")+".json", out, 0o644); err != nil {
			return err
		}
		os.Remove(path)
		var doc struct {
			Estimates []struct {
				Estimator           string
				Value, Lower, Upper *float64
			}
			Recommended string
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			return fmt.Errorf("%s run %d: %v", c, b, err)
		}
		if b == 0 {
			asIs = map[string]result{}
		}
		for _, e := range doc.Estimates {
			if e.Estimator == "behavior" || e.Value == nil {
				continue
			}
			if b == 0 {
				r := result{value: *e.Value, lower: math.NaN(), upper: math.NaN()}
				if e.Lower != nil {
					r.lower, r.upper = *e.Lower, *e.Upper
				}
				asIs[e.Estimator] = r
				order = append(order, e.Estimator)
				if e.Estimator == doc.Recommended {
					asIs["recommended ("+e.Estimator+")"] = r
				}
				continue
			}
			rel[e.Estimator] = append(rel[e.Estimator], math.Abs(*e.Value-truth)/truth)
			if e.Estimator == doc.Recommended {
				rel["recommended"] = append(rel["recommended"], math.Abs(*e.Value-truth)/truth)
			}
		}
	}
	fmt.Printf("| %s | truth: BTS's mean click in its logs | | %.5f ± %.5f (standard error), %d impressions | |\n", c, truth, se, len(bts))
	for _, est := range order {
		r := asIs[est]
		m, sd := meanSD(rel[est])
		holds := "–"
		if !math.IsNaN(r.lower) {
			holds = "no"
			if r.lower <= truth && truth <= r.upper {
				holds = "yes"
			}
		}
		fmt.Printf("| %s | %s | %.3f ± %.3f | %s | %s |\n", c, est, m, sd, figure(r.value, r.lower, r.upper), holds)
	}
	for k, r := range asIs {
		if strings.HasPrefix(k, "recommended") {
			m, sd := meanSD(rel["recommended"])
			holds := "no"
			if r.lower <= truth && truth <= r.upper {
				holds = "yes"
			}
			fmt.Printf("| %s | %s | %.3f ± %.3f | %s | %s |\n", c, k, m, sd, figure(r.value, r.lower, r.upper), holds)
		}
	}
	return nil
}

func figure(v, lo, hi float64) string {
	if math.IsNaN(lo) {
		return fmt.Sprintf("%.5f (no interval)", v)
	}
	return fmt.Sprintf("%.5f [%.5f, %.5f]", v, lo, hi)
}

func meanSD(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	if len(xs) > 1 {
		v /= float64(len(xs) - 1)
	}
	return m, math.Sqrt(v)
}

func readCSV(path string) ([]impression, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, need := range []string{"item_id", "position", "click", "propensity_score"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no column %s", path, need)
		}
	}
	var out []impression
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		click, err1 := strconv.ParseFloat(rec[col["click"]], 64)
		p, err2 := strconv.ParseFloat(rec[col["propensity_score"]], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s line %d: click or propensity_score is not a number", path, line)
		}
		out = append(out, impression{item: rec[col["item_id"]], position: rec[col["position"]], click: click, propensity: p})
	}
}

// writeLogs writes the impressions as psrlcb logs: one-step episodes.
func writeLogs(path string, imps []impression) error {
	rows := make([]schemas.Row, len(imps))
	for i, r := range imps {
		rows[i] = schemas.Row{EpisodeID: int64(i + 1), Step: 1, Observation: r.position, Action: r.item, Reward: r.click, Propensity: r.propensity}
	}
	return parquet.WriteFile(path, rows)
}

// tableRow is a row of a stochastic policy table (package schemas, "Policy
// tables").
type tableRow struct {
	Observation string  `parquet:"observation"`
	Action      string  `parquet:"action"`
	Probability float64 `parquet:"probability"`
}

// writeTable writes BTS's distribution over items at each position, the
// frequencies of its logs, restricted to the items the random logs hold
// (an item the random logs never show cannot be evaluated; the share of
// BTS's impressions that drops is printed).
func writeTable(path string, bts, random []impression) error {
	known := map[string]bool{}
	for _, r := range random {
		known[r.item] = true
	}
	count := map[string]map[string]int{}
	total := map[string]int{}
	dropped := 0
	for _, r := range bts {
		if !known[r.item] {
			dropped++
			continue
		}
		if count[r.position] == nil {
			count[r.position] = map[string]int{}
		}
		count[r.position][r.item]++
		total[r.position]++
	}
	if dropped > 0 {
		fmt.Fprintf(os.Stderr, "obd: %s: %d of BTS's impressions show items the random logs never do; left out of the table\n", path, dropped)
	}
	var rows []tableRow
	var positions []string
	for p := range count {
		positions = append(positions, p)
	}
	sort.Strings(positions)
	for _, p := range positions {
		var items []string
		for it := range count[p] {
			items = append(items, it)
		}
		sort.Strings(items)
		for _, it := range items {
			rows = append(rows, tableRow{Observation: p, Action: it, Probability: float64(count[p][it]) / float64(total[p])})
		}
	}
	return parquet.WriteFile(path, rows)
}
