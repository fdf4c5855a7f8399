package forgejotest

import (
	"embed"
	"encoding/json"
	"fmt"
)

// recordings holds API answers recorded from a real Forgejo 7.0.16 (see
// recordings/README.md). Each JSON object the fake answers starts as a deep
// copy of a recorded one, so it carries every key the real server sends.
//
//go:embed recordings/*.json
var recordings embed.FS

type recording struct {
	Status          int               `json:"status"`
	ResponseHeaders map[string]string `json:"response_headers"`
	ResponseBody    json.RawMessage   `json:"response_body"`
}

// object returns a fresh copy of the recorded response body of file; for a
// list, of its item at index.
func object(file string, index int) map[string]any {
	data, err := recordings.ReadFile("recordings/" + file)
	if err != nil {
		panic(fmt.Sprintf("forgejotest: recording %s: %v", file, err))
	}
	var rec recording
	if err := json.Unmarshal(data, &rec); err != nil {
		panic(fmt.Sprintf("forgejotest: recording %s: %v", file, err))
	}
	if len(rec.ResponseBody) > 0 && rec.ResponseBody[0] == '[' {
		var list []map[string]any
		if err := json.Unmarshal(rec.ResponseBody, &list); err != nil {
			panic(fmt.Sprintf("forgejotest: recording %s: %v", file, err))
		}
		return list[index]
	}
	var obj map[string]any
	if err := json.Unmarshal(rec.ResponseBody, &obj); err != nil {
		panic(fmt.Sprintf("forgejotest: recording %s: %v", file, err))
	}
	return obj
}
