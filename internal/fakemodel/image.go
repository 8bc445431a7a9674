package fakemodel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Images in requests. The server finds the images a request sends to the
// model in either wire format: Anthropic's image blocks with a base64
// source (in user messages or inside tool results) and Chat Completions'
// image_url parts holding a data URL. Each is decoded and its bytes
// checked against its media type's signature; Expect.Images lists the
// media types a request must carry.

// imagesIn returns the media types of the images in a request's messages,
// each prefixed with "bad " when its data is not base64 of an image of
// that type.
func imagesIn(messages json.RawMessage) []string {
	var v any
	if json.Unmarshal(messages, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			if typ, data, ok := imageOf(v); ok {
				out = append(out, checkImage(typ, data))
				return
			}
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// imageOf reads an Anthropic image block or an OpenAI image_url part.
func imageOf(m map[string]any) (mediaType, data string, ok bool) {
	switch m["type"] {
	case "image":
		src, _ := m["source"].(map[string]any)
		if src == nil || src["type"] != "base64" {
			return "", "", false
		}
		mt, _ := src["media_type"].(string)
		d, _ := src["data"].(string)
		return mt, d, true
	case "image_url":
		iu, _ := m["image_url"].(map[string]any)
		url, _ := iu["url"].(string)
		rest, ok := strings.CutPrefix(url, "data:")
		mt, d, ok2 := strings.Cut(rest, ";base64,")
		return mt, d, ok && ok2
	}
	return "", "", false
}

// checkImage returns mediaType, or "bad " + mediaType when data does not
// decode to an image of that type.
func checkImage(mediaType, data string) string {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return "bad " + mediaType
	}
	var ok bool
	switch mediaType {
	case "image/png":
		ok = bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		ok = bytes.HasPrefix(b, []byte("\xff\xd8\xff"))
	case "image/gif":
		ok = bytes.HasPrefix(b, []byte("GIF8"))
	case "image/webp":
		ok = len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	}
	if !ok {
		return "bad " + mediaType
	}
	return mediaType
}
