package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// An archive is several export streams, each with its header, one after the
// other in one file (what lite-agent --prune writes, with Export, before it
// deletes anything). ImportArchive splits it at the header lines and imports each
// stream; a single stream, with or without a header, is an archive of one.

// ImportArchive imports every stream of r, in order. It stops at the first
// stream that does not import; the ones before it stay imported.
// Each session is marked as imported, as by ImportStream with opts.
func ImportArchive(ctx context.Context, c checkpoint.Checkpointer, r io.Reader, opts *ImportOptions) ([]Imported, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Imported
	var piece bytes.Buffer
	flush := func() error {
		if piece.Len() == 0 {
			return nil
		}
		im, err := ImportStream(ctx, c, bytes.NewReader(piece.Bytes()), opts)
		piece.Reset()
		if err != nil {
			return fmt.Errorf("stream %d of the archive: %w", len(out)+1, err)
		}
		out = append(out, im)
		return nil
	}
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return out, fmt.Errorf("import: %w", err)
		}
		if h, _ := parseHeader(line); h != nil {
			if ferr := flush(); ferr != nil {
				return out, ferr
			}
		}
		piece.Write(line)
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if err := flush(); err != nil {
		return out, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("import: %w: the stream holds no events; export a session with jsonl.Export first", ErrFormat)
	}
	return out, nil
}
