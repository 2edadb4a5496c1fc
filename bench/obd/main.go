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
	if err := table(*dir, *bin, *work, *campaigns, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "obd:", err)
		os.Exit(1)
	}
}

// table prints the study's table: the rows of each of the comma-separated
// campaigns in turn.
func table(dir, bin, work, campaigns string, runs int) error {
	fmt.Println("| campaign | estimator | relative error, mean ± sd over runs | estimate on the logs as they are [95% interval] | holds the truth |")
	fmt.Println("|---|---|---|---|---|")
	for _, c := range strings.Split(campaigns, ",") {
		if err := campaign(dir, bin, work, c, runs); err != nil {
			return err
		}
	}
	return nil
}

func campaign(dir, bin, work, c string, runs int) error {
	random, bts, err := readCampaign(dir, c)
	if err != nil {
		return err
	}
	truth, se := clickTruth(bts)
	table := filepath.Join(work, c+"-bts-policy.parquet")
	if err := writeTable(table, bts, random); err != nil {
		return err
	}
	t := &tally{truth: truth, rel: map[string][]float64{}}
	for b := 0; b <= runs; b++ {
		doc, err := evaluateRun(bin, work, c, table, random, b)
		if err != nil {
			return err
		}
		t.add(b, doc)
	}
	t.print(c, se, len(bts))
	return nil
}

// readCampaign reads the campaign c's logs of the random policy and of
// BTS from the obd directory dir.
func readCampaign(dir, c string) (random, bts []impression, err error) {
	random, err = readCSV(filepath.Join(dir, "random", c, c+".csv"))
	if err != nil {
		return nil, nil, err
	}
	bts, err = readCSV(filepath.Join(dir, "bts", c, c+".csv"))
	return random, bts, err
}

// clickTruth is the truth: BTS's mean click in its own logs, with its
// standard error.
func clickTruth(bts []impression) (truth, se float64) {
	truth, sq := 0.0, 0.0
	for _, r := range bts {
		truth += r.click
		sq += r.click * r.click
	}
	n := float64(len(bts))
	truth /= n
	return truth, math.Sqrt((sq/n - truth*truth) / n)
}

// resample returns the logs of run b: the random logs as they are for run
// 0, else a bootstrap resample of them (with replacement, to the same
// size) seeded by b.
func resample(random []impression, b int) []impression {
	if b == 0 {
		return random
	}
	rng := rand.New(rand.NewPCG(uint64(b), 0x0bd))
	logs := make([]impression, len(random))
	for i := range logs {
		logs[i] = random[rng.IntN(len(random))]
	}
	return logs
}

// evalEstimate is one estimate of psrlcb evaluate --json.
type evalEstimate struct {
	Estimator           string
	Value, Lower, Upper *float64
}

// evalDoc is the part of psrlcb evaluate --json's output the study reads.
type evalDoc struct {
	Estimates   []evalEstimate
	Recommended string
}

// evaluateRun writes run b's logs, evaluates BTS's table on them with
// psrlcb evaluate --logs --json (keeping the JSON beside the logs, which
// are removed) and returns the decoded output.
func evaluateRun(bin, work, c, table string, random []impression, b int) (*evalDoc, error) {
	path := filepath.Join(work, fmt.Sprintf("%s-random-%d.parquet", c, b))
	if err := writeLogs(path, resample(random, b)); err != nil {
		return nil, err
	}
	out, err := runEvaluate(bin, path, table, c, b)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(strings.TrimSuffix(path, ".parquet")+".json", out, 0o644); err != nil {
		return nil, err
	}
	os.Remove(path)
	var doc evalDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("%s run %d: %v", c, b, err)
	}
	return &doc, nil
}

// result is an estimate with its 95% interval (NaN bounds: none).
type result struct{ value, lower, upper float64 }

// runEvaluate runs psrlcb evaluate --logs --json on run b's logs at path
// with BTS's table, seeded b+1, and returns its output.
func runEvaluate(bin, path, table, c string, b int) ([]byte, error) {
	out, err := exec.Command(bin, "evaluate", "--logs", path, "--policy", table, "--json", "--seed", strconv.Itoa(b+1)).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil, fmt.Errorf("%s run %d: %v: %s", c, b, err, ee.Stderr)
	} else if err != nil {
		return nil, err
	}
	return out, nil
}

// tally gathers a campaign's runs: the estimates on the logs as they are
// (run 0) and the relative errors |estimate − truth| / truth of the
// bootstrap runs, per estimator and for the recommended one.
type tally struct {
	truth float64
	rel   map[string][]float64
	asIs  map[string]result
	order []string
}

// add tallies the estimates of run b.
func (t *tally) add(b int, doc *evalDoc) {
	if b == 0 {
		t.asIs = map[string]result{}
	}
	for _, e := range doc.Estimates {
		if e.Estimator == "behavior" || e.Value == nil {
			continue
		}
		if b == 0 {
			t.keepAsIs(e, doc.Recommended)
			continue
		}
		t.addRel(e, doc.Recommended)
	}
}

// addRel tallies the relative error of a resampled run's estimate e, also
// under "recommended" when it is the recommended one.
func (t *tally) addRel(e evalEstimate, recommended string) {
	t.rel[e.Estimator] = append(t.rel[e.Estimator], math.Abs(*e.Value-t.truth)/t.truth)
	if e.Estimator == recommended {
		t.rel["recommended"] = append(t.rel["recommended"], math.Abs(*e.Value-t.truth)/t.truth)
	}
}

// keepAsIs records an estimate on the logs as they are, and again under
// "recommended (…)" when it is the one psrlcb evaluate led with.
func (t *tally) keepAsIs(e evalEstimate, recommended string) {
	r := result{value: *e.Value, lower: math.NaN(), upper: math.NaN()}
	if e.Lower != nil {
		r.lower, r.upper = *e.Lower, *e.Upper
	}
	t.asIs[e.Estimator] = r
	t.order = append(t.order, e.Estimator)
	if e.Estimator == recommended {
		t.asIs["recommended ("+e.Estimator+")"] = r
	}
}

// print writes the campaign's rows of the table: the truth, each
// estimator, then the recommended one.
func (t *tally) print(c string, se float64, n int) {
	fmt.Printf("| %s | truth: BTS's mean click in its logs | | %.5f ± %.5f (standard error), %d impressions | |\n", c, t.truth, se, n)
	for _, est := range t.order {
		r := t.asIs[est]
		holds := "–"
		if !math.IsNaN(r.lower) {
			holds = t.holds(r)
		}
		printRow(c, est, t.rel[est], r, holds)
	}
	for k, r := range t.asIs {
		if strings.HasPrefix(k, "recommended") {
			printRow(c, k, t.rel["recommended"], r, t.holds(r))
		}
	}
}

// holds says whether r's interval holds the truth.
func (t *tally) holds(r result) string {
	if r.lower <= t.truth && t.truth <= r.upper {
		return "yes"
	}
	return "no"
}

// printRow writes one estimator's row: its relative error over the runs,
// its estimate on the logs as they are and whether its interval holds the
// truth.
func printRow(c, name string, rel []float64, r result, holds string) {
	m, sd := meanSD(rel)
	fmt.Printf("| %s | %s | %.3f ± %.3f | %s | %s |\n", c, name, m, sd, figure(r.value, r.lower, r.upper), holds)
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
	col, err := columns(path, r)
	if err != nil {
		return nil, err
	}
	return readImpressions(path, r, col)
}

// readImpressions parses the rows of the CSV at path after its header, to
// its end, with the column indices col.
func readImpressions(path string, r *csv.Reader, col map[string]int) ([]impression, error) {
	var out []impression
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		imp, err := parseImpression(rec, col)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		out = append(out, imp)
	}
}

// errNotNumber: a record's click or propensity_score does not parse.
var errNotNumber = errors.New("click or propensity_score is not a number")

// parseImpression is the impression of one CSV record, col mapping the
// column names to their indices.
func parseImpression(rec []string, col map[string]int) (impression, error) {
	click, err1 := strconv.ParseFloat(rec[col["click"]], 64)
	p, err2 := strconv.ParseFloat(rec[col["propensity_score"]], 64)
	if err1 != nil || err2 != nil {
		return impression{}, errNotNumber
	}
	return impression{item: rec[col["item_id"]], position: rec[col["position"]], click: click, propensity: p}, nil
}

// columns reads the CSV header and maps each column name to its index,
// checking that the columns the study reads are there.
func columns(path string, r *csv.Reader) (map[string]int, error) {
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
	return col, nil
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
	count, total, dropped := itemCounts(bts, random)
	if dropped > 0 {
		fmt.Fprintf(os.Stderr, "obd: %s: %d of BTS's impressions show items the random logs never do; left out of the table\n", path, dropped)
	}
	return parquet.WriteFile(path, tableRows(count, total))
}

// itemCounts counts BTS's impressions of each item at each position and
// at each position in all, over the items the random logs hold; dropped
// is how many impressions show other items.
func itemCounts(bts, random []impression) (count map[string]map[string]int, total map[string]int, dropped int) {
	known := itemSet(random)
	count = map[string]map[string]int{}
	total = map[string]int{}
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
	return count, total, dropped
}

// tableRows turns the counts into the table's frequencies, by position
// then item in lexical order.
func tableRows(count map[string]map[string]int, total map[string]int) []tableRow {
	var rows []tableRow
	for _, p := range sortedKeys(count) {
		for _, it := range sortedKeys(count[p]) {
			rows = append(rows, tableRow{Observation: p, Action: it, Probability: float64(count[p][it]) / float64(total[p])})
		}
	}
	return rows
}

// itemSet is the set of the items the impressions show.
func itemSet(imps []impression) map[string]bool {
	known := map[string]bool{}
	for _, r := range imps {
		known[r.item] = true
	}
	return known
}

// sortedKeys are the keys of m in lexical order.
func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
