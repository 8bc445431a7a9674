// Command benchfloor is the physical floor of one tool-using turn, the
// program cmd/lite-agent's whole-process benchmarks measure beside the real
// binary: it does only what such a turn cannot do without. It makes the
// same two streaming model requests lite-agent made (their bodies are
// given as files) over one kept-alive connection, reading each stream to
// its end, writes the file the tool call writes, and makes three durable
// appends (write and fsync of 1 KiB) where lite-agent's durability rules
// need them: the prompt before the first request, the intent before the
// tool, the receipt before the second request. No start-up of a large
// binary, no store, no agent logic.
//
//	benchfloor BASE_URL BODY1 BODY2 FILE LOG
package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: benchfloor BASE_URL BODY1 BODY2 FILE LOG")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]); err != nil {
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		os.Exit(1)
	}
}

func run(base, body1, body2, file, logPath string) error {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	record := make([]byte, 1024)
	appendDurably := func() error {
		if _, err := log.Write(record); err != nil {
			return err
		}
		return log.Sync()
	}
	client := &http.Client{}
	if err := appendDurably(); err != nil { // the prompt
		return err
	}
	if err := stream(client, base, body1); err != nil {
		return err
	}
	if err := appendDurably(); err != nil { // the intent
		return err
	}
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		return err
	}
	if err := appendDurably(); err != nil { // the receipt
		return err
	}
	return stream(client, base, body2)
}

// stream posts the request body read from path to the Anthropic messages
// endpoint and reads the event stream to its end.
func stream(client *http.Client, base, path string) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("model answered %s", resp.Status)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
