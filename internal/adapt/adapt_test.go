package adapt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	id := func(s string) string { return s }
	api, kept, err := Split([]string{"search", "final_answer", "fetch", "handoff"}, id, []string{"handoff", "final_answer"})
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "fetch"}, api)
	assert.Equal(t, []string{"final_answer", "handoff"}, kept)

	api, kept, err = Split([]string{"search"}, id, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"search"}, api)
	assert.Empty(t, kept)

	_, _, err = Split([]string{"search"}, id, []string{"final_anwser"})
	assert.EqualError(t, err, `codemode: plain tool "final_anwser" is not among the tools`)
	_, _, err = Split([]string{"run_js"}, id, nil)
	assert.EqualError(t, err, "codemode: a tool is named run_js, the code tool's own name")
}
