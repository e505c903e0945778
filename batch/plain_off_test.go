//go:build race || asan || codemode_checked

package batch_test

// plainBuild says the tests run without a sanitizer or checked mode.
const plainBuild = false
