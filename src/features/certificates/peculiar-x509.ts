// @peculiar/x509 v2 needs a Reflect metadata polyfill loaded before it (its tsyringe container checks at
// load time), so certificate code imports the library only through this file. reflect-metadata comes in
// through acme-client today; it belongs in package.json's dependencies.
import "reflect-metadata";

export {
  BasicConstraintsExtension,
  ExtendedKeyUsage,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  Pkcs10CertificateRequestGenerator,
  SubjectAlternativeNameExtension,
  SubjectKeyIdentifierExtension,
  X509Certificate,
  X509CertificateGenerator,
} from "@peculiar/x509";
