package controllerruntime

// AttrReconcileID is the reconcile span's attribute of controller-runtime's
// reconcileID, for the tests.
const AttrReconcileID = attrReconcileID
