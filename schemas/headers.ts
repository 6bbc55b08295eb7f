/**
 * Request header names of the API, shared by the client, the config and the sandbox. This file imports nothing,
 * so the config can read it without loading the API's schemas.
 */

/** HTTP header names (RFC 9110 tokens). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The request header every operation takes its API version in (spec part 9). Deployments of this API name it
 * differently: a store's `apiVersionHeader` in the config, the sandbox's `versionHeader`.
 */
export const API_VERSION_HEADER = 'X-Platform-API-Version';
