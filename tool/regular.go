package tool

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// NotRegularError is returned for a path that is neither a regular file nor
// a directory where a file's content was needed: a FIFO, a socket, a
// device. Nothing was read from it or written to it.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s); only regular files are read, written or restored", e.Path, kindOf(e.Mode))
}

func kindOf(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeDir != 0:
		return "a directory"
	default:
		return t.String()
	}
}

// OpenRegular opens the regular file at l for reading without blocking on
// anything else: it opens with O_NONBLOCK (an open or read of a FIFO or a
// device would otherwise wait for a writer forever), then checks with fstat
// that what it opened is a regular file, so a file swapped for a FIFO
// between a stat and the open is refused too. Anything else is a
// *NotRegularError (a directory too) and is closed unread.
func (l Loc) OpenRegular() (*os.File, fs.FileInfo, error) {
	f, err := l.FS.OpenFile(l.Name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fi, &NotRegularError{Path: l.Path, Mode: fi.Mode()}
	}
	return f, fi, nil
}

// ReadRegular reads the whole regular file at l (see OpenRegular).
func (l Loc) ReadRegular() ([]byte, fs.FileInfo, error) {
	f, fi, err := l.OpenRegular()
	if err != nil {
		return nil, fi, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	return data, fi, err
}

// CheckWritable refuses to write over anything at l that is not a regular
// file (a FIFO, a socket, a device: opening one for writing can block, and
// replacing it is not the tools' job). A missing file is fine.
func (l Loc) CheckWritable() error {
	fi, err := l.FS.Lstat(l.Name)
	if err != nil || fi.Mode().IsRegular() {
		return nil // missing, or unreadable: the write reports it
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil // resolved by Locate; the write goes through os.Root
	}
	return &NotRegularError{Path: l.Path, Mode: fi.Mode()}
}
