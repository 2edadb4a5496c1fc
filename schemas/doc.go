// Package schemas describes the input log schema of psrlcb (docs/design.md
// section 3) as code: the columns a trajectory log carries, their accepted
// Parquet types, the alias names recognised by default, and a Mapping that
// lets users name their own columns; the schema of the stochastic
// policy tables psrlcb evaluate --logs reads; and the schemas of the
// policy a fit writes (policy.arrow) and of its controller
// (controller.arrow).
//
// # Trajectory logs
//
// Long format, one row per step, any number of Parquet files, any row-group
// layout. Rows may arrive in any order and an episode may span files.
//
//	column       type                          required  meaning
//	episode_id   int32/int64 or string         yes       groups rows into episodes
//	step         int32/int64                   yes       1-based time index h within the episode
//	observation  string or int32/int64         yes       o_h, a categorical symbol
//	action       string or int32/int64         yes       a_h, a categorical symbol
//	reward       float64 (float32, ints, decimals accepted)  yes  r_h received after taking a_h
//	propensity   float64 in (0,1] (float32, decimals)  no  π^b(a_h | τ_{h-1}, o_h) as logged
//	terminal     bool                          no        true on the last step of an episode that ended early
//
// Exploration logs (psrlcb explore, package explore: the online PSR-UCB loop)
// carry two more columns, optional for every other command, which ingest
// ignores and package explore reads itself:
//
//	column        type         required        meaning
//	round         int32/int64  for explore     k, the exploration round that collected the episode
//	explore_step  int32/int64  for explore     h in 1..H: steps < h followed the round's policy, steps ≥ h were uniform
//
// Both are constant within an episode; the episodes with explore_step = h
// form D_{h−1} of the paper's Algorithm 1.
//
// Accepted default aliases: pscore, propensity_score and action_prob for
// propensity; t and timestep for step; done and is_last for terminal. A
// name given in a Mapping replaces the default name and its aliases.
//
// Timing follows the paper (Section 2): at step h the agent sees o_h, takes
// a_h with probability π^b(a_h | τ_{h-1}, o_h) and then receives r_h; the
// return of an episode is Σ_h r_h.
//
// # Policy tables
//
// A stochastic policy table gives the probability of each action given
// the history, for psrlcb evaluate --logs --policy TABLE (package ope
// reads it). One row per (history, action), as an Arrow IPC file or, by
// the extension .parquet, a Parquet file:
//
//	column       type            required  meaning
//	observation  string          yes       o_h, the observation just seen; "*": any observation
//	action       string          yes       a_h, an action of the logs
//	probability  double          yes       π(a_h | τ_{h−1}, o_h), in [0,1]
//	step         int32/int64     no        h (1-based) the row applies to; 0, null or absent: any step
//	history      string          no        τ_{h−1} = o_1,a_1,…,o_{h−1},a_{h−1}, the symbols before o_h,
//	                                       comma-separated or as a JSON array of strings (as act
//	                                       --history takes them); "" is the empty history of step 1;
//	                                       "*", null or absent: any history
//
// The rows of one (step, history, observation) form a distribution over
// the actions: their probabilities sum to one (within 1e-5, so six
// decimals suffice; actions not listed have probability zero). At each
// logged step the most specific group applies: a group of that step
// before a group of any step; among those, a given history before "*";
// among those, a given observation before "*". So a context-free policy
// is one row per action with observation "*"; a policy of the current
// observation alone is one group per observation; a policy of the whole
// history lists its histories. A row naming an action or an observation
// the logs never hold, a probability outside [0,1] or a group not summing
// to one is an error naming the file and the row; a logged step no group
// covers is an error naming the episode, the step and the history (exit
// code 3 for both).
//
// # The policy (policy.arrow)
//
// A fit writes its policy as a decision tree, one row per decision node
// (package policy: Policy, WriteFile, ReadFile, and Cursor for the
// lookup rule). The history o_1,a_1,…,o_h of a node is the path from the
// root to it:
//
//	column           type    meaning
//	node             int64   the row's index
//	parent           int64   the node of o_1,…,a_{h−1}; −1 at step 1
//	step             int32   h, 1..H
//	observation      string  o_h
//	action           string  a_h, the action the row takes at its history
//	fallback_action  string  the action for the rest of an episode once its history has no row
//	reach_prob       double  P_θ̂^π of reaching the node under the fitted model
//	value_reward     double  the expected return to go from step h, rescaled to [0,1]
//	value_bonus      double  the expected bonus b̂ of the episode given the node
//	value_lcb        double  value_reward − value_bonus
//	probability      double  optional: π(a_h | τ_{h−1}, o_h), only in a stochastic policy
//
// Without a probability column the policy is deterministic: no two rows
// share a parent and an observation, so the observations alone find a
// history's row (the actions between them are the policy's own). At step
// 1 the row with parent −1 and o_1, then the child with o_h; once no row
// matches, the fallback_action of the last row found, or the controller
// when controller.arrow is beside the file. When the rows are in level
// order (parents never decrease, as a fit writes them) the schema
// metadata psrlcb.batch_index lists the parent of each record batch's
// first row, so a lookup reads only the batches that hold a history's
// rows; a file without it is read whole.
//
// With a probability column the policy is stochastic (a fit writes one
// when its behaviour fallback keeps the behaviour: the behaviour's own
// estimated action distribution at the histories where the logs show no
// better action). The rows that share a parent and an observation are the
// actions the policy may take at that history: distinct actions, each
// with a probability in (0, 1], summing to one within 1e-6. Each row's
// children continue the history with that row's action, so a history is
// followed by its observations and the actions taken; an action the
// policy never takes there leaves the rows, and the fallback_action of
// the rows at that observation plays from then on. A stochastic policy.arrow
// has no psrlcb.batch_index (it is read whole) and no controller.arrow
// beside it. It is not a policy table of the section above: those list
// the probabilities of actions by history for evaluate --logs, without
// a tree.
//
// Schema metadata: psrlcb.schema_version, psrlcb.horizon and, in a
// fit's output, psrlcb.run_id, psrlcb.values_alpha (the α the
// value_bonus and value_lcb columns are priced at) and
// psrlcb.bound_alpha (the α of the run's reported bound).
//
// # The controller (controller.arrow)
//
// A fit whose policy the belief planner made writes, beside policy.arrow
// and model.arrow, the policy for every history (package policy,
// Controller; docs/planning.md). Long form, one row per number:
//
//	column      type    meaning
//	kind        string  "alpha": a coordinate of an α-vector; "reward": the rescaled expected
//	                    reward of a state and action; "bonus": an entry of the bonus's quadratic form
//	step        int32   h, 1..H
//	class       int32   alpha: 0 for the vectors after an ordinary observation, 1 after "<end>"; else −1
//	index       int32   alpha: the vector's index within its step and class; else −1
//	action      string  alpha: the vector's action; reward, bonus: the action
//	state       int32   the latent state s (0-based, the states of model.arrow)
//	next_state  int32   bonus: the second state of the entry; else −1
//	value       double  the number
//
// A vector's coordinates are consecutive rows, states in order. Schema
// metadata: psrlcb.horizon, psrlcb.states, psrlcb.kappa (the slope κ of the
// surrogate bonus), psrlcb.lookahead (per step 1..H, "1" when the
// controller acts by the one-step lookahead, "0" by the best α-vector),
// psrlcb.values_alpha and psrlcb.run_id. The action after a history is
// computed from the belief the model's filter gives it: the lookahead
// argmax_a r_{h,a}·b − κ·bᵀM_{h,a}b + Σ_o max_i α_{h+1,i}·(T_aᵀb ∘ E_a(o|·)),
// or the action of argmax_i α_{h,i}·b, at b rounded to 2⁻³⁰.
//
// Log columns may be nullable (as DuckDB and pyarrow write them) but must hold
// no nulls; dictionary encoding is accepted for every column. Symbols are
// categorical: integer symbols are rendered in decimal and, like string
// symbols, sorted bytewise ("10" sorts before "9"), so codes never depend on
// file order. The symbol "<end>" is reserved for the padding of episodes
// that ended early.
package schemas
