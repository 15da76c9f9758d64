// HaulKit's users see the core's value types (ranges, policies, credentials, proxy choice, TLS trust) as
// HaulKit's own: one import.
@_exported import HaulCore
