package command

import "sync"

// lazyTable is a lookup table built on its first use instead of in the
// package's initialiser: every program that links this package (agentbox
// --version, a launch that never analyses a command) would otherwise build
// every table at start. A lazyTable literal is static data (its build
// function captures nothing), so declaring one costs nothing at start; a
// lookup after the first costs one atomic load.
type lazyTable[K comparable, V any] struct {
	once  sync.Once
	m     map[K]V
	build func() map[K]V
}

// get returns the table, building it on the first call.
func (t *lazyTable[K, V]) get() map[K]V {
	t.once.Do(t.fill)
	return t.m
}

func (t *lazyTable[K, V]) fill() { t.m = t.build() }
