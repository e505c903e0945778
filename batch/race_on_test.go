//go:build race

package batch_test

// mixSize is TestOutcomesAreTheJobs' batch: a quarter under the race
// detector, which slows the Go side of every job many times.
const mixSize = 2_500
