package export_test

import (
	"testing"

	"github.com/agentbox/agentbox/internal/collectortest"
)

type collector = collectortest.Collector

func startCollector(t testing.TB, dir string) *collector { return collectortest.Start(t, dir) }

func freePort(t testing.TB) string { return collectortest.FreePort(t) }
