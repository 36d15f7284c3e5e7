/**
 * The example flows module served by `baton serve examples/approvals`:
 * approvals (deploy confirmed by the caller; expense and refund decided by
 * someone else, which needs a ledger), release notes (roots + sampling with a
 * fallback) and single-use access codes (needs a ledger).
 */
import { grantTemporaryAccess, redeemAccessCode } from './accessCodes.js';
import { deployProduction } from './deployProduction.js';
import { expenseApproval } from './expenseApproval.js';
import { refundRequest } from './refundRequest.js';
import { draftReleaseNotes } from './releaseNotes.js';

export { deployProduction, draftReleaseNotes, expenseApproval, grantTemporaryAccess, redeemAccessCode, refundRequest };
export default [
  deployProduction,
  expenseApproval,
  refundRequest,
  draftReleaseNotes,
  grantTemporaryAccess,
  redeemAccessCode,
];
