//go:build race

package policy

// raceEnabled: sync.Pool drops items at random under -race, so allocation
// counts are not meaningful.
const raceEnabled = true
