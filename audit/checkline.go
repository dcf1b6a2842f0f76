package audit

// CheckLine reports whether line (one log line without its newline)
// carries a valid MAC made with k: what VerifyKeyed checks of each line,
// for callers that verify lines gathered out of a file (audit/fleet
// verifies lines received by a collector from many hosts).
func (k Key) CheckLine(line []byte) bool { return k.checkMAC(line) }
