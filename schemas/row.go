package schemas

// Row is one logged step in the default column names: the struct that
// psrlcb's own writers (simulate, explore, the benchmark generators) hand
// to parquet-go, so every file the tool writes has one schema. Observation
// and action are dictionary-encoded strings.
type Row struct {
	EpisodeID   int64   `parquet:"episode_id"`
	Step        int64   `parquet:"step"`
	Observation string  `parquet:"observation,dict"`
	Action      string  `parquet:"action,dict"`
	Reward      float64 `parquet:"reward"`
	Propensity  float64 `parquet:"propensity"`
	Terminal    bool    `parquet:"terminal"`
}
