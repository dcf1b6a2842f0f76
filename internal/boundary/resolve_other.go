//go:build !linux

package boundary

// resolvePlain: no openat2 off Linux; ResolveExisting walks.
func resolvePlain(string) (string, bool) { return "", false }
