import type { OperationSpec } from '../../../schemas/index.js';
import { HttpError } from './errors.js';

/**
 * The version header (spec part 9, `X-Platform-API-Version` unless the sandbox is started with another name):
 * required, one accepted value per operation. The only route with two operations, POST /orders/, picks the one
 * whose version was asked for and answers in its shape.
 */

export function selectOperation(
  operations: OperationSpec[],
  header: string | string[] | undefined,
  headerName: string,
): OperationSpec {
  const accepted = operations.map((op) => op.version);
  const acceptedText = accepted.join(' or ');
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') {
    throw new HttpError(
      400,
      'version_required',
      `The ${headerName} header is required; this operation accepts ${acceptedText}.`,
      [{ field: headerName, message: `required: ${acceptedText}` }],
    );
  }
  const chosen = operations.find((op) => op.version === value.trim());
  if (!chosen) {
    throw new HttpError(
      400,
      'version_unsupported',
      `${headerName} "${value}" is not accepted by this operation; send ${acceptedText}.`,
      [{ field: headerName, message: `expected ${acceptedText}` }],
    );
  }
  return chosen;
}
