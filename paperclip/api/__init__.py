"""The app's own routes: the request gate, who is calling, the OpenAPI document, the
board's files, health, metrics, recovery status, the plugins listing and the runner
WebSocket route. The domains' routes are in ``paperclip/domain``."""
