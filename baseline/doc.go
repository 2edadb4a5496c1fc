// Package baseline holds the two naive offline baselines that the
// validation study compares with PSR-LCB: a count-based pessimistic planner
// on the empirical history tree (TabularLCB) and behaviour cloning
// (BehaviorCloning). Neither is part of the paper's Algorithm 2 (PSR-LCB);
// they are the methods a data team could write without a model, and they
// show what the low-rank model and the paper's bonus buy.
//
// Both treat every logged observation history as its own state. The
// empirical history tree has one node per logged history
// τ = (o_1, a_1, …, o_h), keyed by the full history including the actions
// taken before, with per action a the count n(τ,a), the mean immediate
// reward r̂(τ,a) and the empirical next-observation distribution
// p̂(o | τ, a) = n(τ a o)/n(τ,a).
//
// TabularLCB is pessimistic value iteration on that tree, the tabular
// offline method of the works the paper cites for offline MDPs (PEVI of
// Jin, Yang and Wang 2021; VI-LCB of Rashidinejad et al. 2021) with
// histories as states:
//
//	Q(τ,a) = r̂(τ,a) − pen(τ,a) + Σ_o p̂(o|τ,a) V(τ a o),  pen(τ,a) = min(c/√n(τ,a), 1),
//	V(τ)   = max over actions with n(τ,a) > 0 of Q(τ,a),
//
// solved exactly by backward dynamic programming. BehaviorCloning takes the
// most frequently logged action at every logged history.
//
// Rewards are rescaled as everywhere in psrlcb (docs/design.md, section 3): with
// the smallest and largest logged return m and M, every step's reward
// becomes r'_h = (r_h − m/H)/(M − m), so that the rescaled return
// R = Σ_h r'_h = (Σ_h r_h − m)/(M − m) lies in [0,1] on every logged
// episode. When all returns are equal the divisor is 1 and R = 0.
//
// Output is a *policy.Policy whose columns mean what they mean for the
// PSR-LCB planner: reach_prob is the probability of reaching the node under
// the returned policy, value_reward is the expected rescaled reward to go
// from the node's step, value_bonus the expected pessimism of the whole
// episode (the steps already taken included) and value_lcb their
// difference, here under the empirical model rather than θ̂. The value of
// the policy is Σ reach_prob·value_lcb over the step-1 nodes.
//
// The policy tree only holds logged histories. A history that leaves it
// acts, for the rest of the episode, with the fallback action of the last
// node found (the lookup rule of policy.Cursor). Both baselines set the
// fallback of a step-h node to the action logged most often at steps
// h+1..H, ignoring the end symbol (ties to the lowest action index; a
// step-H node, whose fallback is never used, takes the most frequent action
// of step H): that is what a behaviour-cloning data team would do once the
// history is unknown. A node whose observation is the end symbol acts and
// falls back with the end symbol; a history that leaves the tree before its
// episode ends keeps its fallback, which is harmless because the end action
// is forced (docs/design.md, section 3). Logged propensities are not used: both
// baselines work from counts alone. Inputs are never modified, and the output
// depends only on the dataset and the options (ties and child order are
// broken by vocabulary index).
package baseline
