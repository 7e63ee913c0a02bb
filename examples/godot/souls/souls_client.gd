# SoulsClient: one NPC's soul, live, in a Godot 3 scene.
#
# Add it as a child node (or SoulsClient.new()), set url, soul_id and token, and connect its signals. It holds one
# WebSocket to the Souls API with the graphql-transport-ws protocol, subscribes to the soul's crystallizationReady
# and levelChanged events, answers pings, reconnects with capped exponential backoff and jitter (subscribing
# again each time), and reads the soul's rendered block over HTTP on request (fetch_rendered). It stops for good
# only when retrying cannot help: the server refused the token (4403) or the protocol.
# The protocol and the same client for Godot 4 and Unity: docs/game-engines.md.
extends Node
class_name SoulsClient

# connection_ack received: the subscriptions are sent (again, after a reconnect).
signal connected()
# The socket closed or could not open; the next attempt is in retry_in seconds.
signal disconnected(code, reason, retry_in)
# The soul became ready for refinement: {at, priority, soul: {id, name, crystallization: {...}}}.
signal crystallization_ready(event)
# A level-up or its revert: {at, kind ("LEVEL_UP" or "REVERT"), soul: {id, name, level}, event: {...}}.
signal level_changed(event)
# The soul's rendered block (what goes into the NPC's prompt), as fetch_rendered read it.
signal rendered(soul_id, text)
# Something failed that does not end the connection: a GraphQL error, a failed HTTP request.
signal request_failed(what, message)
# Retrying cannot help (a refused token, a refused protocol): no more attempts until start() is called again.
signal stopped(reason)

const SUBPROTOCOL = "graphql-transport-ws"
# Close codes of graphql-ws after which a retry meets the same refusal.
const FORBIDDEN = 4403
const FINAL_CLOSE_CODES = {4400: "bad request", 4403: "forbidden", 4406: "subprotocol not acceptable"}

const READY_QUERY = """subscription NpcReady($soulIds: [ID!]) {
  crystallizationReady(soulIds: $soulIds) {
    at priority
    soul { id name crystallization { pendingCount distinctSources ageSpreadDays } }
  }
}"""
const LEVEL_QUERY = """subscription NpcLevel($soulId: ID) {
  levelChanged(soulId: $soulId) {
    at kind
    soul { id name level }
    event { id level essenceBefore essenceAfter }
  }
}"""
const RENDERED_QUERY = """query NpcRendered($soulId: ID!) {
  soul(id: $soulId) { id name level rendered }
}"""

# http://host:4000/graphql (the WebSocket uses the same path: ws://host:4000/graphql).
export var url := "http://127.0.0.1:4000/graphql"
export var soul_id := ""
# A bearer token, for a server started with --tokens-file: sent in connection_init and on HTTP requests.
export var token := ""
export var autostart := true
export var reconnect_initial_s := 0.5
export var reconnect_max_s := 30.0
# A ping this often; a connection whose pong has not come back by the next one is dropped and reopened.
export var keepalive_s := 15.0
export var ack_timeout_s := 10.0

enum State { IDLE, CONNECTING, INITIALISING, READY, WAITING, STOPPED }

var state = State.IDLE
var _ws: WebSocketClient = null
# Which socket is current: the handlers of one that was replaced ignore what it still reports.
var _generation := 0
# Sockets closing: polled until their close handshake ends (or CLOSE_WAIT_S), so the close frame goes out.
var _closing := []
const CLOSE_WAIT_S = 2.0
var _attempt := 0
var _wait_left := 0.0
var _ack_left := 0.0
var _ping_left := 0.0
var _pong_pending := false
var _close_code := -1
var _close_reason := ""
var _too_slow := {}
var _rng := RandomNumberGenerator.new()
var _http: HTTPRequest
var _http_busy := false
var _http_again := false


func _ready() -> void:
	_rng.randomize()
	_http = HTTPRequest.new()
	add_child(_http)
	_http.connect("request_completed", self, "_on_http_completed")
	if autostart and soul_id != "":
		start()


# Opens the connection (again, after stopped); the attempt counter starts over.
func start() -> void:
	if state != State.IDLE and state != State.STOPPED:
		return
	_attempt = 0
	_open()


# Closes the connection and makes no more attempts.
func stop() -> void:
	state = State.STOPPED
	_close_socket(1000, "client stopped")


func websocket_url() -> String:
	if url.begins_with("https://"):
		return "wss://" + url.substr(8)
	if url.begins_with("http://"):
		return "ws://" + url.substr(7)
	return url


func _process(delta: float) -> void:
	var ws = _ws # a local reference: a handler may replace _ws while poll() runs
	if ws != null:
		ws.poll()
	_poll_closing(delta)
	match state:
		State.WAITING:
			_wait_left -= delta
			if _wait_left <= 0.0:
				_open()
		State.INITIALISING:
			_ack_left -= delta
			if _ack_left <= 0.0:
				_drop(4504, "no connection_ack within %s s" % ack_timeout_s)
		State.READY:
			if keepalive_s > 0.0:
				_ping_left -= delta
				if _ping_left <= 0.0:
					_keepalive()


func _open() -> void:
	_close_code = -1
	_close_reason = ""
	_too_slow.clear()
	_generation += 1
	var current = [_generation]
	_ws = WebSocketClient.new()
	_ws.connect("connection_established", self, "_on_established", current)
	_ws.connect("data_received", self, "_on_data", current)
	_ws.connect("server_close_request", self, "_on_close_request", current)
	_ws.connect("connection_closed", self, "_on_closed", current)
	_ws.connect("connection_error", self, "_on_error", current)
	state = State.CONNECTING
	var error = _ws.connect_to_url(websocket_url(), PoolStringArray([SUBPROTOCOL]))
	if error != OK:
		_retry(-1, "cannot open %s (error %d)" % [websocket_url(), error])


func _on_established(protocol: String, generation: int) -> void:
	if generation != _generation:
		return
	if protocol != SUBPROTOCOL:
		_fail("the server did not accept the %s subprotocol (it chose \"%s\")" % [SUBPROTOCOL, protocol])
		return
	_ws.get_peer(1).set_write_mode(WebSocketPeer.WRITE_MODE_TEXT)
	var payload = {}
	if token != "":
		payload["authorization"] = "Bearer " + token
	_send({"type": "connection_init", "payload": payload})
	state = State.INITIALISING
	_ack_left = ack_timeout_s


func _on_data(generation: int) -> void:
	if generation != _generation:
		return
	var peer = _ws.get_peer(1)
	while generation == _generation and peer.get_available_packet_count() > 0:
		_on_message(peer.get_packet().get_string_from_utf8())


func _on_message(text: String) -> void:
	var message = _json_object(text)
	if message == null:
		_drop(4400, "the server sent a message that is not a JSON object")
		return
	match message.get("type", ""):
		"connection_ack":
			state = State.READY
			_attempt = 0
			_ping_left = keepalive_s
			_pong_pending = false
			_subscribe("ready")
			_subscribe("level")
			emit_signal("connected")
		"ping":
			_send({"type": "pong"})
		"pong":
			_pong_pending = false
		"next":
			_on_next(str(message.get("id", "")), message.get("payload", {}))
		"error":
			emit_signal("request_failed", str(message.get("id", "")), _messages_of(message.get("payload", [])))
		"complete":
			_on_complete(str(message.get("id", "")))


func _subscribe(id: String) -> void:
	var payload = {"query": READY_QUERY, "operationName": "NpcReady", "variables": {"soulIds": [soul_id]}}
	if id == "level":
		payload = {"query": LEVEL_QUERY, "operationName": "NpcLevel", "variables": {"soulId": soul_id}}
	_send({"id": id, "type": "subscribe", "payload": payload})


func _on_next(id: String, payload) -> void:
	if typeof(payload) != TYPE_DICTIONARY:
		return
	var errors = payload.get("errors", [])
	if typeof(errors) == TYPE_ARRAY and errors.size() > 0:
		for error in errors:
			var extensions = error.get("extensions") if typeof(error) == TYPE_DICTIONARY else null
			if typeof(extensions) == TYPE_DICTIONARY and extensions.get("code") == "SUBSCRIBER_TOO_SLOW":
				_too_slow[id] = true
		emit_signal("request_failed", id, _messages_of(errors))
	var data = payload.get("data")
	if typeof(data) != TYPE_DICTIONARY:
		return
	if id == "ready" and data.has("crystallizationReady"):
		emit_signal("crystallization_ready", data["crystallizationReady"])
	elif id == "level" and data.has("levelChanged"):
		emit_signal("level_changed", data["levelChanged"])


# The server ends a subscription that fell too far behind (SUBSCRIBER_TOO_SLOW): subscribe again, once per cut.
# Any other end is final for that subscription: asking again would meet the same answer.
func _on_complete(id: String) -> void:
	if _too_slow.erase(id) and state == State.READY:
		_subscribe(id)


func _keepalive() -> void:
	if _pong_pending:
		_drop(4408, "no pong within %s s" % keepalive_s)
		return
	_pong_pending = true
	_ping_left = keepalive_s
	_send({"type": "ping"})


func _on_close_request(code: int, reason: String, generation: int) -> void:
	if generation != _generation:
		return
	_close_code = code
	_close_reason = reason


func _on_closed(_was_clean: bool, generation: int) -> void:
	if generation == _generation:
		_lost()


func _on_error(generation: int) -> void:
	if generation == _generation:
		_lost()


func _lost() -> void:
	var code = _close_code
	if code == FORBIDDEN:
		var why = "it does not accept this token" if token != "" else "it requires one (set token)"
		_fail("the server refused the connection (%d %s): %s" % [code, _close_reason if _close_reason != "" else "Forbidden", why])
	elif FINAL_CLOSE_CODES.has(code):
		_fail("the server closed the connection (%d %s: %s)" % [code, FINAL_CLOSE_CODES[code], _close_reason])
	elif state == State.CONNECTING:
		_retry(code, "cannot connect to %s" % websocket_url())
	else:
		_retry(code, _close_reason if _close_reason != "" else "connection lost")


# Closes a connection that misbehaves (no ack, no pong) and tries again.
func _drop(code: int, reason: String) -> void:
	_close_socket(code, reason)
	_retry(code, reason)


# Equal jitter: half the capped exponential delay, plus a random part of the other half. Attempt n waits between
# base(n) / 2 and base(n), base(n) = min(max, initial * 2^n): below the cap, never less than the attempt before.
func _retry(code: int, reason: String) -> void:
	_close_socket(1000, "")
	var base = min(reconnect_max_s, reconnect_initial_s * pow(2, _attempt))
	var delay = base / 2.0 + _rng.randf() * base / 2.0
	_attempt += 1
	state = State.WAITING
	_wait_left = delay
	emit_signal("disconnected", code, reason, delay)


func _fail(reason: String) -> void:
	state = State.STOPPED
	_close_socket(1000, "")
	emit_signal("stopped", reason)


func _close_socket(code: int, reason: String) -> void:
	if _ws == null:
		return
	var ws = _ws
	_ws = null
	_generation += 1
	ws.disconnect_from_host(code, reason)
	_closing.append({"socket": ws, "left": CLOSE_WAIT_S})


func _poll_closing(delta: float) -> void:
	for closing in _closing.duplicate():
		closing["socket"].poll()
		closing["left"] -= delta
		if closing["left"] <= 0.0 or closing["socket"].get_connection_status() == NetworkedMultiplayerPeer.CONNECTION_DISCONNECTED:
			_closing.erase(closing)


func _send(message: Dictionary) -> void:
	if _ws != null:
		_ws.get_peer(1).put_packet(to_json(message).to_utf8())


# The Dictionary a JSON object text holds, or null. Godot 3's JSON.parse prints an error for what is not JSON at all
# (a proxy's HTML page), so such a text is turned away first.
func _json_object(text: String):
	if not text.strip_edges().begins_with("{"):
		return null
	var parsed = JSON.parse(text)
	return parsed.result if parsed.error == OK and typeof(parsed.result) == TYPE_DICTIONARY else null


func _messages_of(errors) -> String:
	if typeof(errors) != TYPE_ARRAY:
		return str(errors)
	var messages = []
	for error in errors:
		messages.append(str(error.get("message", error)) if typeof(error) == TYPE_DICTIONARY else str(error))
	return PoolStringArray(messages).join("; ")


# Reads the soul's rendered block over HTTP (POST /graphql) and emits rendered(soul_id, text). Asked again while a
# request is in flight, it reads once more when that one ends.
func fetch_rendered() -> void:
	if _http_busy:
		_http_again = true
		return
	var headers = ["Content-Type: application/json", "Accept: application/graphql-response+json, application/json"]
	if token != "":
		headers.append("Authorization: Bearer " + token)
	var body = to_json({"query": RENDERED_QUERY, "operationName": "NpcRendered", "variables": {"soulId": soul_id}})
	var error = _http.request(url, PoolStringArray(headers), true, HTTPClient.METHOD_POST, body)
	if error != OK:
		emit_signal("request_failed", "rendered", "cannot send the request to %s (error %d)" % [url, error])
		return
	_http_busy = true


func _on_http_completed(result: int, status: int, _headers: PoolStringArray, body: PoolByteArray) -> void:
	_http_busy = false
	_read_rendered(result, status, body.get_string_from_utf8())
	if _http_again:
		_http_again = false
		fetch_rendered()


func _read_rendered(result: int, status: int, text: String) -> void:
	if result != HTTPRequest.RESULT_SUCCESS:
		emit_signal("request_failed", "rendered", "no answer from %s (HTTPRequest result %d)" % [url, result])
		return
	var answer = _json_object(text)
	if answer == null:
		emit_signal("request_failed", "rendered", "HTTP %d, not a GraphQL answer from %s" % [status, url])
		return
	if answer.has("errors"):
		emit_signal("request_failed", "rendered", "HTTP %d: %s" % [status, _messages_of(answer["errors"])])
		return
	var soul = answer.get("data", {}).get("soul") if typeof(answer.get("data")) == TYPE_DICTIONARY else null
	if status != 200 or typeof(soul) != TYPE_DICTIONARY:
		var why = "no soul with id %s" % soul_id if status == 200 else "HTTP %d" % status
		emit_signal("request_failed", "rendered", why)
		return
	emit_signal("rendered", soul["id"], soul["rendered"])
