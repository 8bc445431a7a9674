// Command lite-agent-serve is `lite-agent serve`: the HTTP API, live
// streams and web viewer over a session store. Its arguments are serve's
// (see lite-agent serve --help); lite-agent runs it, installed beside it,
// for `lite-agent serve`. It is its own command so that lite-agent does
// not link the server's html/template, which doubles a binary's size.
package main

import (
	"os"

	"github.com/lite-agent/lite-agent/cli"
	"github.com/lite-agent/lite-agent/server/servecmd"
)

func main() {
	os.Args = append([]string{os.Args[0], "serve"}, os.Args[1:]...)
	os.Exit(cli.Command(&cli.Linked{Serving: servecmd.New}))
}
