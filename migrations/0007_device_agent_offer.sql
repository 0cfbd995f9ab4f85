-- What a device's agent offers, from its last link's initialize (ACP's agentCapabilities and authMethods), shown in
-- the devices list beside agent_info: JSON text, null before the device ever linked.
ALTER TABLE devices ADD COLUMN agent_capabilities TEXT;
ALTER TABLE devices ADD COLUMN auth_methods TEXT;
