//go:build !race

package batch_test

// mixSize is TestOutcomesAreTheJobs' batch.
const mixSize = 10_000
