package estimate

// Exported for the external tests: the internal tests' generators, to
// compare with estimatetest's.
var (
	RandomModelInternal   = randomModel
	SampleDatasetInternal = sampleDataset
)
