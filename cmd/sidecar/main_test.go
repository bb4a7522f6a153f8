package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that run, started by several tests, leaves no goroutine
// behind once it has returned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
