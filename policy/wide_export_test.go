package policy

// SetWideObs sets wideObs for a test and returns the function restoring it.
func SetWideObs(n int) func() {
	old := wideObs
	wideObs = n
	return func() { wideObs = old }
}
