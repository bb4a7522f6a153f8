// Package resilience provides a bounded retry policy with jittered
// exponential backoff and a circuit breaker, both driven by an injectable
// clock so that tests never sleep.
package resilience
