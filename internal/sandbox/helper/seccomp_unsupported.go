//go:build !linux || !(amd64 || arm64)

package helper

import (
	"fmt"
	"runtime"
)

// seccompOptions selects the variable parts of the seccomp filter; see the
// linux/amd64 and linux/arm64 build for the meaning of each field.
type seccompOptions struct {
	AllowNetwork bool
}

// installSeccomp always fails here: the filter's syscall tables exist only
// for linux/amd64 and linux/arm64.
func installSeccomp(opts seccompOptions) error {
	return fmt.Errorf("seccomp: no syscall table for %s/%s (supported: linux/amd64, linux/arm64)", runtime.GOOS, runtime.GOARCH)
}
