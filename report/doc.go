// Package report renders a finished fit: the Arrow tables, manifest.json
// and report.html of a `psrlcb fit` output directory. Build tabulates the
// stages' results and the figures the pipeline measured on the logs
// (Figures, from package pipeline's measure phase); it never refits or
// replans.
//
// report.html is one self-contained page (inline CSS and SVG; no script,
// font or network request) written for a reader who acts on it: the
// verdict, the headline figures in the logs' units of return, where the
// policy π̄ departs from an action the logs clearly favour and what that
// departure is worth under the fitted model, π̄'s most probable decision
// nodes with their reach under the model and in the logs, the plots (held-
// out likelihood per rank, EM convergence, coverage and C∞ per step, the
// bonus per step as quantile summaries, the α sweep) and a glossary of
// every symbol. Steps are 1-based everywhere, as in the paper (Huang,
// Liang, Yang, "Provably Efficient UCB-type Algorithms For Learning
// Predictive State Representations", ICLR 2024, arXiv:2307.00405,
// Section 5, Algorithm 2). Every plotted mark is a summary, so the page's
// size does not grow with the number of episodes.
//
// Values are on the paper's [0,1] scale of the return, R = (return −
// least logged return)/(largest − least), in the tables and manifest
// fields without a _units suffix; the page leads with the user's units.
package report
