//go:build race || asan

package remote_test

// raceEnabled: the race detector or ASan makes the RSS its own.
const raceEnabled = true
