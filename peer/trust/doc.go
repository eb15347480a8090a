// Package trust is the policy of spot-checks (spec section 12): how many
// records of each merge a peer re-polls, when the refutations of a source
// make it distrusted, and when its confirmations vouch for it. A live peer
// (package peer) and the simulator (package sim, "cocrawl sim liars") apply
// the same policy, so what the simulator measures is what a peer does.
package trust
