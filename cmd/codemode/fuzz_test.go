package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
)

// FuzzBatchInput: any bytes as a batch's input. The line reader returns
// exactly the input's lines (one past the limit reported, not returned,
// and the lines after it still read); each line becomes a job or a bad
// input keeping its id when it had one; and the output line of either
// outcome is one JSON object carrying that id.
func FuzzBatchInput(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"code":"return 1"}` + "\n" + `{"id":"b","code":"return 2","limits":{"deadline":"50ms","memory":"8MiB"}}`,
		`{"id":1}`, `{"code":"x"}`, `not json`, `{"id":[1],"code":""}`, `{"id":1e400,"code":""}`, `{"id":"\ud800","code":"1"}`,
		`{"id":2,"code":"1","extra":true}`, `{"id":3,"code":"1","limits":{"deadline":-5}}`, `{"id":4,"code":"1","limits":{"memory":"lots"}}`,
		`{"id":5,"code":"1","providers":["a","a"]}`, "\n\n\r\n", "{\"id\":\"\xff\",\"code\":\"1\"}", `{"id":"x"` + "\n" + `,"code":"1"}`,
	} {
		f.Add([]byte(s))
	}
	const max = 48
	base := codemode.Limits{Deadline: time.Second}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want [][]byte // the lines, by the reader's definition
		for rest := data; len(rest) > 0; {
			line, after, _ := bytes.Cut(rest, []byte("\n"))
			want, rest = append(want, line), after
		}
		lr := newLineReader(bytes.NewReader(data), max)
		for n := 1; ; n++ {
			line, err := lr.next()
			if err == io.EOF {
				if n-1 != len(want) {
					t.Fatalf("%d lines read of %d", n-1, len(want))
				}
				return
			}
			if n > len(want) {
				t.Fatalf("line %d read past the input's %d", n, len(want))
			}
			if len(want[n-1]) > max {
				if !errors.Is(err, errLineTooLong) {
					t.Fatalf("line %d (%d bytes, limit %d): %q, %v", n, len(want[n-1]), max, line, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(line, want[n-1]) {
				t.Fatalf("line %d = %q, %v; want %q", n, line, err, want[n-1])
			}
			checkJob(t, line, n, base)
		}
	})
}

func checkJob(t *testing.T, line []byte, n int, base codemode.Limits) {
	j := parseJob(line, n, base)
	if j.Line != n {
		t.Fatalf("job of line %d says line %d", n, j.Line)
	}
	var id any
	if err := json.Unmarshal([]byte(j.ID), &id); err != nil {
		t.Fatalf("line %q: id %q is not JSON", line, j.ID)
	}
	switch id.(type) {
	case string, float64, nil:
	default:
		t.Fatalf("line %q: id %q is not a string, a number or null", line, j.ID)
	}
	if j.Err == nil && j.Limits != nil {
		l := *j.Limits
		if l.Memory < 0 || l.Stack < 0 || l.Payload < 0 || l.Logs < 0 || l.Deadline < 0 {
			t.Fatalf("line %q: negative limits %+v", line, l)
		}
	}
	outcomes := []batch.Outcome{{Kind: batch.KindOK, Result: json.RawMessage(`{"a":[1]}`), Logs: []string{"l\u2028"}},
		{Kind: batch.KindBadInput, Problem: "bad \"line\"", Logs: []string{}}}
	if j.Err != nil {
		outcomes = []batch.Outcome{{Kind: batch.KindBadInput, Problem: j.Err.Error(), Logs: []string{}}}
	}
	for _, o := range outcomes {
		out := resultLine(nil, j, o, true)
		if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
			t.Fatalf("line %q: output %q is not one line", line, out)
		}
		var got struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("line %q: output %q is not JSON: %v", line, out, err)
		}
		if string(got.ID) != j.ID {
			t.Fatalf("line %q: output id %s, job id %s", line, got.ID, j.ID)
		}
	}
}

// TestLineReaderLimit: a line of max bytes is read whether or not a line
// end follows it, one of max+1 is too long either way (the last line
// without its end was let through one byte over: found by FuzzBatchInput).
func TestLineReaderLimit(t *testing.T) {
	for _, c := range []struct {
		in   string
		long bool
	}{{"abcd\n", false}, {"abcd", false}, {"abcde\n", true}, {"abcde", true}} {
		_, err := newLineReader(bytes.NewReader([]byte(c.in)), 4).next()
		if got := errors.Is(err, errLineTooLong); got != c.long {
			t.Errorf("%q: too long %v, want %v (%v)", c.in, got, c.long, err)
		}
	}
}
