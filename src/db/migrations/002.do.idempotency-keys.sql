-- Idempotency keys of creates: each is written in the transaction that creates
-- its cat, so a key is never recorded without its cat, nor a cat without its key.
-- scope is the user the key belongs to ('' when keys are shared by every client);
-- fingerprint identifies the request body; response is the JSON sent at creation,
-- replayed as it was. created_at_ms is when it was recorded (milliseconds since
-- the epoch, from the service's clock); keys older than their lifetime are ignored
-- and swept.
CREATE TABLE idempotency_keys (
  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  response text NOT NULL,
  created_at_ms bigint NOT NULL,
  PRIMARY KEY (scope, key)
);

CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at_ms);
