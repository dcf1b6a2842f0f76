//go:build !linux

package boundary

// resolvePlain: no openat2 off Linux; ResolveExisting walks.
func resolvePlain(string, func(string) (bool, bool)) (string, bool) { return "", false }

// PlainPath: no openat2 off Linux; neither exists nor missing, so the
// caller resolves the slow way.
func PlainPath(string) (exists, missing bool) { return false, false }
