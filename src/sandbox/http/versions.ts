import type { OperationSpec } from '../../../schemas/index.js';
import { HttpError } from './errors.js';

/**
 * `X-Platform-API-Version` (spec part 9): required, one accepted value per operation. The only route with
 * two operations, POST /orders/, picks the one whose version was asked for and answers in its shape.
 */

export const VERSION_HEADER = 'X-Platform-API-Version';

export function selectOperation(
  operations: OperationSpec[],
  header: string | string[] | undefined,
): OperationSpec {
  const accepted = operations.map((op) => op.version);
  const acceptedText = accepted.join(' or ');
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') {
    throw new HttpError(
      400,
      'version_required',
      `The ${VERSION_HEADER} header is required; this operation accepts ${acceptedText}.`,
      [{ field: VERSION_HEADER, message: `required: ${acceptedText}` }],
    );
  }
  const chosen = operations.find((op) => op.version === value.trim());
  if (!chosen) {
    throw new HttpError(
      400,
      'version_unsupported',
      `${VERSION_HEADER} "${value}" is not accepted by this operation; send ${acceptedText}.`,
      [{ field: VERSION_HEADER, message: `expected ${acceptedText}` }],
    );
  }
  return chosen;
}
