package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// lineReader reads lines of any length: one longer than max is skipped
// to its end and reported (errLineTooLong) instead of ending the input,
// so every line after it is still read.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

var errLineTooLong = errors.New("the line is longer than the limit")

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its end; io.EOF when there is none.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	long := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !long {
			n := len(lr.buf) + len(chunk)
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				n-- // the line's end is not the line's
			}
			if n > lr.max {
				long = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(lr.buf) == 0 && !long:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, err
		}
		if long {
			return nil, fmt.Errorf("%w (%d bytes)", errLineTooLong, lr.max)
		}
		n := len(lr.buf)
		if n > 0 && lr.buf[n-1] == '\n' {
			n--
		}
		return lr.buf[:n], nil
	}
}
