package policy

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// sizeUnits are binary multiples: "64M" is 64 MiB, as in docker/podman
// --memory and systemd MemoryMax=.
var sizeUnits = map[string]int64{
	"":  1,
	"b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses a byte size such as "64M", "2G", "512k", "1.5G" or
// "1048576". Units are case-insensitive binary multiples (K = 1024) with an
// optional "B"/"iB"; a decimal fraction is allowed and the result is
// rounded down to whole bytes. Negative numbers, exponents, unknown units
// and sizes over 2^63-1 bytes are errors that quote the value.
func ParseSize(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	if num == "" || num == "." || strings.Count(num, ".") > 1 || strings.HasPrefix(num, ".") || strings.HasSuffix(num, ".") {
		return 0, fmt.Errorf("invalid size %q: want a number with an optional unit, e.g. 512k, 64M, 1.5G", orig)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use k, M, G or T)", orig, s[i:])
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("invalid size %q: bad number %q", orig, num)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() || n.Int64() > math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: larger than %d bytes", orig, int64(math.MaxInt64))
	}
	return n.Int64(), nil
}
