"""The defaults a Connection and ClientConfig share, so a bare Connection behaves like a pooled one."""

DEFAULT_CLIENT_ID = "kafkaev"
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
# librdkafka's and the Java client's defaults: the first retry soon, the worst case 10 s apart
DEFAULT_RECONNECT_BACKOFF_MS = 100
DEFAULT_RECONNECT_BACKOFF_MAX_MS = 10_000
# BusyPoll's longest window (ClientConfig.busy_poll_us): a second is already a loop that never
# sleeps while anything happens on the client's sockets.
MAX_BUSY_POLL_US = 1_000_000
