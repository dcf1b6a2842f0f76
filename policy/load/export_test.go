package load

import "github.com/agentbox/agentbox/policy"

// SetReaders replaces the registered format readers (a test links fewer
// than policy/formats does) and returns the ones it replaced.
func SetReaders(rs []policy.FormatReader) []policy.FormatReader {
	formatReaders.Lock()
	defer formatReaders.Unlock()
	old := formatReaders.list
	formatReaders.list = rs
	return old
}
