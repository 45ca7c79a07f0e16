"""What XLA emitted: HLO modules parsed and priced op by op, profiles read and set beside the estimates, the compile cross-check against the real compiler, and the shipped HLO corpus."""
