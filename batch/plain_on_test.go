//go:build !race && !asan && !codemode_checked

package batch_test

// plainBuild says the tests run without a sanitizer or checked mode:
// TestOutcomesAreTheJobs runs only then (make test runs it so, alone).
const plainBuild = true
