// Sign-ins to http MCP servers in VS Code: `hostBridge/signIn` shows "Sign in to <server>" and opens the sign-in
// page in the browser (which comes back to the sidecar's loopback listener); `hostBridge/getSecret` and
// `hostBridge/storeSecret` keep the sidecar's tokens in VS Code's SecretStorage. The words and checks are in
// signInModel.
import * as vscode from "vscode";
import type * as protocol from "../protocol";
import { SignInChoice, openableSignInUrl, secretKey, signInQuestion } from "./signInModel";

/** Asks the user to sign in; `opened` once the browser was sent to the sign-in page. */
export async function askSignIn(
  params: protocol.SignInParams,
  log: vscode.LogOutputChannel,
): Promise<protocol.SignInResult> {
  const url = openableSignInUrl(params.url);
  if (url === undefined) {
    log.warn(`sign-in: the address for the MCP server “${params.server}” is not https; it was not opened`);
    return { opened: false };
  }
  const choice = await vscode.window.showInformationMessage(
    signInQuestion(params.label),
    SignInChoice.signIn,
    SignInChoice.notNow,
  );
  if (choice !== SignInChoice.signIn) {
    log.info(`sign-in: not now for the MCP server “${params.server}”; restart it to be asked again`);
    return { opened: false };
  }
  const opened = await vscode.env.openExternal(vscode.Uri.parse(url, true));
  log.info(`sign-in: opened the sign-in page of the MCP server “${params.server}” in the browser`);
  return { opened };
}

/** A secret the sidecar keeps in SecretStorage. */
export async function getSecret(
  secrets: vscode.SecretStorage,
  params: protocol.SecretParams,
): Promise<protocol.SecretResult> {
  const value = await secrets.get(secretKey(params.key));
  return value === undefined ? {} : { value };
}

/** Keep (or, without a value, forget) a sidecar secret in SecretStorage. */
export async function storeSecret(secrets: vscode.SecretStorage, params: protocol.StoreSecretParams): Promise<null> {
  if (params.value === undefined || params.value === null) {
    await secrets.delete(secretKey(params.key));
  } else {
    await secrets.store(secretKey(params.key), params.value);
  }
  return null;
}
