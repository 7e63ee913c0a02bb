# The example scene: one SoulsClient for the NPC named on the command line, every signal printed as one line,
# "SOULS <signal> <json>", so a person can read it and a program can parse it. The rendered block is read at
# each connection and after each level change.
#
#   godot3-server --path examples/godot -- --url=http://127.0.0.1:4000/graphql --soul=1 [--token=T]
#
# The token may come from SOULS_TOKEN instead (kept out of the process list), the URL from SOULS_URL.
# --reconnect-initial=S and --reconnect-max=S set the backoff, --keepalive=S the ping interval.
# Exits 1 when the client stops for good (a refused token), 2 on bad arguments.
extends Node

onready var souls = $SoulsClient


func _ready() -> void:
	var options = _options()
	if not options.has("soul"):
		printerr("usage: godot3-server --path examples/godot -- --soul=ID [--url=URL] [--token=TOKEN]")
		get_tree().quit(2)
		return
	souls.url = options.get("url", OS.get_environment("SOULS_URL") if OS.has_environment("SOULS_URL") else souls.url)
	souls.soul_id = options["soul"]
	souls.token = options.get("token", OS.get_environment("SOULS_TOKEN"))
	for name in ["reconnect_initial", "reconnect_max", "keepalive"]:
		if options.has(name):
			souls.set(name + "_s", float(options[name]))
	souls.connect("connected", self, "_on_connected")
	souls.connect("disconnected", self, "_on_disconnected")
	souls.connect("crystallization_ready", self, "_show", ["ready"])
	souls.connect("level_changed", self, "_on_level_changed")
	souls.connect("rendered", self, "_on_rendered")
	souls.connect("request_failed", self, "_on_request_failed")
	souls.connect("stopped", self, "_on_stopped")
	souls.start()


# --name=value arguments after the engine's own ("--" separates them), as a Dictionary with "-" read as "_".
func _options() -> Dictionary:
	var options = {}
	for argument in OS.get_cmdline_args():
		if argument.begins_with("--") and "=" in argument:
			var name = argument.substr(2, argument.find("=") - 2).replace("-", "_")
			options[name] = argument.substr(argument.find("=") + 1)
	return options


func _show(value, what: String) -> void:
	print("SOULS %s %s" % [what, to_json(value)])


func _on_connected() -> void:
	_show({"url": souls.websocket_url(), "soul_id": souls.soul_id}, "connected")
	souls.fetch_rendered()


func _on_disconnected(code: int, reason: String, retry_in: float) -> void:
	_show({"code": code, "reason": reason, "retry_in": retry_in}, "disconnected")


func _on_level_changed(event: Dictionary) -> void:
	_show(event, "level")
	souls.fetch_rendered()


func _on_rendered(soul_id: String, text: String) -> void:
	_show({"soul_id": soul_id, "rendered": text}, "rendered")


func _on_request_failed(what: String, message: String) -> void:
	_show({"what": what, "message": message}, "failed")


func _on_stopped(reason: String) -> void:
	_show({"reason": reason}, "stopped")
	printerr("souls: " + reason)
	get_tree().quit(1)
