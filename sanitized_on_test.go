//go:build race || asan

package codemode

// sanitized: the tests run under the race detector or AddressSanitizer,
// whose allocators make the RSS their own (shadow memory, quarantine).
const sanitized = true
